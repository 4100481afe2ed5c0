//! What a script asks of the engine beyond HTTP: WebSocket sessions (k6's
//! `k6/ws` and `k6/websockets`) and gRPC calls (`k6/net/grpc`). The script side
//! keeps the JavaScript objects and their handlers; the engine keeps the
//! connections, sends and reads on the VU's own task (never blocking a worker)
//! and records them as pado's WebSocket and gRPC series.

use std::time::Duration;

/// A WebSocket request of a script. Sockets are named by the id the engine gave
/// when it opened them; they live until closed or until the iteration ends.
#[derive(Debug)]
pub enum ScriptWsCall {
    /// Open a session (TCP, TLS, upgrade); answered with
    /// [`ScriptWsReply::Opened`] or [`ScriptWsReply::Failed`].
    Open(Box<ScriptWsOpen>),
    /// Send a message on socket `id`; answered with [`ScriptWsReply::Done`], or
    /// [`ScriptWsReply::Failed`] when it could not be written.
    Send {
        /// The socket.
        id: u32,
        /// The message.
        data: Vec<u8>,
        /// A binary message (else text, which must be UTF-8).
        binary: bool,
    },
    /// Send a ping on socket `id`; answered with [`ScriptWsReply::Done`].
    Ping {
        /// The socket.
        id: u32,
    },
    /// Close socket `id` with `code` (our close frame; as k6, the session ends
    /// now, the server's answer is not awaited). Answered with
    /// [`ScriptWsReply::Done`].
    Close {
        /// The socket.
        id: u32,
        /// The close code (1000: normal).
        code: u16,
    },
    /// Wait for the next event of any open socket, at most `timeout` (none:
    /// until one comes); answered with [`ScriptWsReply::Event`],
    /// [`ScriptWsReply::Timeout`], or [`ScriptWsReply::Idle`] when no socket is
    /// open.
    Wait {
        /// The longest wait.
        timeout: Option<Duration>,
    },
}

/// A session to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptWsOpen {
    /// `ws://` or `wss://` URL.
    pub url: String,
    /// Extra handshake headers.
    pub headers: Vec<(String, String)>,
    /// The series name (k6's `name` tag; by default the URL).
    pub name: Option<String>,
    /// k6's group path, a tag of the series.
    pub group: Option<String>,
}

/// The engine's answer to a [`ScriptWsCall`].
#[derive(Debug, PartialEq, Eq)]
pub enum ScriptWsReply {
    /// The session is open: its id, the handshake's status (101) and headers.
    Opened {
        /// The socket's id.
        id: u32,
        /// The handshake's status.
        status: u16,
        /// The handshake response's headers.
        headers: Vec<(String, String)>,
    },
    /// The call failed: the handshake's status if one came (0 otherwise), and why.
    Failed {
        /// The handshake's status, 0 when none came.
        status: u16,
        /// Why, in words.
        error: String,
    },
    /// A send, ping or close went out.
    Done,
    /// An event of socket `id`.
    Event {
        /// The socket.
        id: u32,
        /// What happened.
        kind: ScriptWsEventKind,
        /// A message's bytes; the reason of a close or an error.
        data: Vec<u8>,
        /// A close's code.
        code: u16,
    },
    /// The wait's timeout passed first.
    Timeout,
    /// No socket is open.
    Idle,
}

/// What happened on a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptWsEventKind {
    /// A text message.
    Text,
    /// A binary message.
    Binary,
    /// The server's ping (already answered).
    Ping,
    /// A pong.
    Pong,
    /// The session ended (the socket is gone).
    Close,
    /// The session broke (a `Close` event follows on the next wait).
    Error,
}

/// A gRPC call of a script (unary, or a server stream): the message already
/// encoded by the script side, which holds the descriptors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptGrpcCall {
    /// `host:port` of the server.
    pub target: String,
    /// Plain HTTP/2 (h2c) rather than TLS.
    pub plaintext: bool,
    /// `/package.Service/Method`.
    pub method: String,
    /// Metadata sent with the call.
    pub metadata: Vec<(String, String)>,
    /// The request message, protobuf-encoded (not yet length-prefixed).
    pub message: Vec<u8>,
    /// The call's deadline (k6's default: 60 s).
    pub timeout: Option<Duration>,
    /// The series name (k6's `name` tag; by default the method).
    pub name: Option<String>,
    /// The largest reply message accepted.
    pub max_message: Option<usize>,
    /// A server stream (`grpc.Stream`): every reply is kept and the call is
    /// counted among `grpc_streams` with its messages.
    pub streaming: bool,
}

/// What a gRPC call came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptGrpcReply {
    /// The gRPC status code; `None` when the call failed in transport.
    pub code: Option<u16>,
    /// The reply messages, protobuf-encoded.
    pub messages: Vec<Vec<u8>>,
    /// Why the call failed in transport, or empty.
    pub error: String,
}
