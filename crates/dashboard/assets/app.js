// A placeholder page: lists the seconds the API serves (the real page replaces it).
"use strict";
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const headers = token ? { Authorization: "Bearer " + token } : {};
let next = 0;
async function tick() {
  try {
    const run = await (await fetch("/api/run", { headers })).json();
    document.getElementById("name").textContent = "pado live: " + run.name;
    const page = await (await fetch("/api/seconds?from=" + next, { headers })).json();
    const body = document.querySelector("#seconds tbody");
    for (const s of page.seconds) {
      const tr = document.createElement("tr");
      for (const v of [s.t, s.vus, s.rps, s.p95_ms, JSON.stringify(s.errors || {})]) {
        const td = document.createElement("td");
        td.textContent = v === undefined ? "" : String(v);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    next = page.next;
    const st = await (await fetch("/api/state", { headers })).json();
    document.getElementById("state").textContent =
      (st.ended ? "ended" : st.paused ? "paused" : "running") + " at " + st.elapsed_s.toFixed(0) + " s";
  } catch (e) {
    document.getElementById("state").textContent = "no answer: " + e;
  }
}
tick();
setInterval(tick, 1000);
