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
    /// Send a ping on socket `id` (its payload a number, as k6's, so that its
    /// pong is matched to it); answered with [`ScriptWsReply::Done`].
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
    /// The server answered the handshake with a status other than 101 (k6's
    /// `ws.connect` then returns this response: status, headers and body).
    Refused {
        /// The status.
        status: u16,
        /// The response's headers.
        headers: Vec<(String, String)>,
        /// The body bytes that came with the response's head.
        body: Vec<u8>,
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
        /// A pong that answered one of the script's pings: the time from that
        /// ping to this pong in µs (k6's `ws_ping`); 0 for any other event.
        ping_us: u64,
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
    /// The TLS the script gave `connect()` (k6's `tls: {cacerts, cert, key}`);
    /// `None`: the run's own (its `insecureSkipTLSVerify` included).
    pub tls: Option<ScriptGrpcTls>,
}

/// k6's `connect(addr, { tls: { cacerts, cert, key } })`: what a gRPC
/// connection trusts and presents, as PEM text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ScriptGrpcTls {
    /// CA certificates trusted besides the system's and the bundled roots.
    pub cacerts: Vec<String>,
    /// The client certificate chain (mutual TLS), or empty.
    pub cert: String,
    /// Its private key, or empty. A secret: never shown.
    pub key: String,
}

impl std::fmt::Debug for ScriptGrpcTls {
    /// Never the key: it is a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ScriptGrpcTls({} CA certificates, client certificate: {}, key hidden)",
            self.cacerts.len(),
            !self.cert.is_empty()
        )
    }
}

/// A request about a script's gRPC streams (k6's `grpc.Stream`: client, server
/// and bidirectional streams) or its server's reflection service. Streams are
/// named by the id the engine gave when it opened them; they live until they end
/// or the iteration does.
#[derive(Debug)]
pub enum ScriptGrpcStreamCall {
    /// Open a stream of `call.method` (its `message` unused); answered with
    /// [`ScriptGrpcStreamReply::Opened`] or [`ScriptGrpcStreamReply::Failed`].
    Open(Box<ScriptGrpcCall>),
    /// Write one request message (protobuf bytes) on stream `id`; answered with
    /// [`ScriptGrpcStreamReply::Done`] or [`ScriptGrpcStreamReply::Failed`].
    Write {
        /// The stream.
        id: u32,
        /// The message, protobuf-encoded.
        message: Vec<u8>,
    },
    /// End the writing of stream `id` (the half-close); answered with
    /// [`ScriptGrpcStreamReply::Done`].
    End {
        /// The stream.
        id: u32,
    },
    /// Wait for the next event of any open stream, at most `timeout` (none:
    /// until one comes); answered with [`ScriptGrpcStreamReply::Message`],
    /// [`ScriptGrpcStreamReply::Ended`], [`ScriptGrpcStreamReply::Timeout`] or
    /// [`ScriptGrpcStreamReply::Idle`] when none is open.
    Wait {
        /// The longest wait.
        timeout: Option<Duration>,
    },
    /// Ask the server's reflection service (`grpc.reflection.v1`, else
    /// `v1alpha`, as k6) for every service's files (`call.target`, `plaintext`,
    /// `tls`, `metadata`, `timeout`); answered with
    /// [`ScriptGrpcStreamReply::Reflected`] or [`ScriptGrpcStreamReply::Failed`].
    Reflect(Box<ScriptGrpcCall>),
}

/// The engine's answer to a [`ScriptGrpcStreamCall`].
#[derive(Debug, PartialEq, Eq)]
pub enum ScriptGrpcStreamReply {
    /// The stream is open: its id.
    Opened {
        /// The stream's id.
        id: u32,
    },
    /// The call failed: why, in words.
    Failed {
        /// Why.
        error: String,
    },
    /// A write or end went out.
    Done,
    /// A reply message of stream `id`.
    Message {
        /// The stream.
        id: u32,
        /// The message, protobuf-encoded.
        message: Vec<u8>,
    },
    /// Stream `id` ended (it is gone), with its status.
    Ended {
        /// The stream.
        id: u32,
        /// How it ended.
        reply: Box<ScriptGrpcReply>,
    },
    /// The wait's timeout passed first.
    Timeout,
    /// No stream is open.
    Idle,
    /// The reflection service's files: encoded `FileDescriptorProto`s.
    Reflected {
        /// Every file the server's services need.
        files: Vec<Vec<u8>>,
    },
}

/// What a gRPC call came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptGrpcReply {
    /// The gRPC status code; `None` when the call failed in transport.
    pub code: Option<u16>,
    /// The reply messages, protobuf-encoded.
    pub messages: Vec<Vec<u8>>,
    /// Why the call failed in transport, or the status message the server
    /// gave (`grpc-message`), or empty.
    pub error: String,
    /// The response head's metadata (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The trailers' metadata (lower-case names, without `grpc-status` and
    /// `grpc-message`).
    pub trailers: Vec<(String, String)>,
}
