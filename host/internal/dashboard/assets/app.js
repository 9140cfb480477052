// plugboard dashboard: one page, no dependencies, no build step. Every board
// action is a tool call through /ui/api/call, which runs the host's own
// pipeline (policy, validation, request_id, decision log) as the signed-in
// identity. The server tells the page what changed (/ui/api/events, Server-
// Sent Events); the page reads again only then, never on a timer.
//
// The scripts share this file's helpers: app.js (the core: requests,
// routing, live events, shortcuts), board.js (board, task, own work),
// attempt.js (attempt: conversation, log, review), ops.js (the operator's
// views), diffview.js (the diff component). They are loaded in that order,
// deferred; the page starts at DOMContentLoaded.
"use strict";

const state = {me: null, timers: [], tools: null, live: null, keys: null};
const main = () => document.getElementById("main");

// h builds an element: h("a", {href: "#/"}, "text", child…).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// fill replaces el's children with kids, as h takes them: arrays flattened,
// null, undefined and false left out (replaceChildren would write them as
// text).
function fill(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}

function showError(env) {
  const box = document.getElementById("alert");
  fill(box,
    h("div", {class: "msg"}, env.message || String(env)),
    env.hint ? h("div", {class: "hint"}, "Hint: " + env.hint) : null,
    env.code ? h("div", {class: "muted mono"}, env.code) : null);
  box.hidden = false;
}
function clearError() { document.getElementById("alert").hidden = true; }

async function api(path, body) {
  const opts = {headers: {}};
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Plugboard-CSRF"] = state.me && state.me.csrf || "";
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch("/ui/api/" + path, opts);
  } catch (e) {
    return {ok: false, error: {message: "the server cannot be reached", hint: "check that plugboard serve is running, then try again", retryable: true}};
  }
  let data;
  try { data = await res.json(); } catch (e) { data = {ok: false, error: {message: "the server answered " + res.status}}; }
  if (res.status === 401) { state.me = null; state.tools = null; render(); }
  return data;
}

// call runs a tool; on an envelope it shows message and hint and returns null.
async function call(tool, args) {
  const data = await api("call", {tool: tool, arguments: args || {}});
  if (!data.ok) { showError(data.error || {message: "failed"}); return null; }
  return data.result;
}

// tryCall runs a tool and returns {result} or {error} without showing the
// envelope: for an answer the page shows in place (a WORKER without a task).
async function tryCall(tool, args) {
  const data = await api("call", {tool: tool, arguments: args || {}});
  return data.ok ? {result: data.result} : {error: data.error || {message: "failed"}};
}

// may reports whether the signed-in identity may call tool (the tools the
// server lists for it), so the page offers only what will not be refused.
function may(tool) { return !state.tools || state.tools.has(tool); }

async function operatorRead(path, body) {
  const data = await api(path, body);
  if (!data.ok) { showError(data.error || {message: "failed"}); return null; }
  return data.result;
}

// every runs fn on a timer until the view changes: only for clocks drawn
// on the page (elapsed time) and the operator's tables, never to learn
// whether the board changed.
function every(ms, fn) { const t = setInterval(fn, ms); state.timers.push(t); }
function stopTimers() { state.timers.forEach(clearInterval); state.timers = []; }

function badge(s, label) { return s ? h("span", {class: "badge " + s}, label || s) : null; }
function short(id) { return id ? id.slice(0, 8) : ""; }
function notice(text) { main().prepend(h("div", {class: "notice", role: "status"}, text)); }

// ago says how long before now an RFC3339 time was: "12s", "4m 3s", "2h 5m".
function ago(iso, now) {
  const t = Date.parse(iso);
  if (!iso || Number.isNaN(t)) return "";
  let s = Math.max(0, Math.floor(((now || Date.now()) - t) / 1000));
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60); s %= 60;
  if (m < 60) return m + "m " + s + "s";
  return Math.floor(m / 60) + "h " + (m % 60) + "m";
}

// tickClocks redraws every [data-since] element as the time since its
// value, once a second while the view shows any.
function tickClocks() {
  const now = Date.now();
  for (const el of document.querySelectorAll("[data-since]")) el.textContent = ago(el.dataset.since, now);
}

// ---- live events ------------------------------------------------------------

// watch opens the server's event stream for a project and/or an attempt
// and calls on(kind, data) for each "board" or "attempt" event, and on
// ("ready") when the stream (re)opens: a reopened stream may have missed
// events, so "ready" means read again. The browser's EventSource reconnects
// by itself; the stream is closed when the view changes. Events that come
// in a burst are folded: on is called at most once per kind per 150 ms.
function watch(topics, on) {
  stopLive();
  const qs = new URLSearchParams();
  if (topics.project) qs.set("project_id", topics.project);
  if (topics.attempt) qs.set("attempt_id", topics.attempt);
  const src = new EventSource("/ui/api/events?" + qs);
  const pending = new Map();
  const fire = (kind, data) => {
    const prev = pending.get(kind);
    if (prev) { prev.data = merge(prev.data, data); return; }
    const entry = {data: data};
    pending.set(kind, entry);
    setTimeout(() => { pending.delete(kind); if (state.live === src) on(kind, entry.data); }, 150);
  };
  // Every ready means "read again": the first covers what changed between
  // the view's first read and the stream's opening, a later one what a
  // dropped connection missed.
  src.addEventListener("ready", () => { setLiveMark(true); fire("ready", {}); });
  for (const kind of ["board", "attempt"]) {
    src.addEventListener(kind, (ev) => {
      let data = {};
      try { data = JSON.parse(ev.data); } catch (e) { /* a wake-up is enough */ }
      fire(kind, data);
    });
  }
  src.onerror = () => setLiveMark(false);
  state.live = src;
  return src;
}
// serial wraps an async loader so that one runs at a time: a call while
// one runs makes exactly one more run after it (the newest state wins,
// none is lost, none overlaps and doubles lines).
// The arguments of the newest call are the ones the next run gets.
function serial(fn) {
  let running = null, again = false, args = [];
  return (...a) => {
    args = a;
    if (running) { again = true; return running; }
    running = (async () => {
      try { do { again = false; await fn(...args); } while (again); } finally { running = null; }
    })();
    return running;
  };
}
function merge(a, b) {
  const what = new Set([...(a.what || []), ...(b.what || [])]);
  return Object.assign({}, a, b, {what: [...what]});
}
function stopLive() {
  if (state.live) state.live.close();
  state.live = null;
  setLiveMark(null);
}
// setLiveMark shows whether the page is being told of changes.
function setLiveMark(on) {
  const el = document.getElementById("live");
  if (!el) return;
  el.hidden = on === null;
  el.className = "live " + (on ? "on" : "off");
  el.textContent = on ? "Live" : "Reconnecting…";
  el.title = on ? "The server tells this page of every change" : "The connection to the server dropped; the browser reconnects by itself";
}

// ---- the page's own session -------------------------------------------------

// The page records the session it signed in with (its CSRF token) in this
// origin's storage. Another origin can plant a session cookie in this
// browser (cookies ignore ports, and a sibling subdomain can set one for a
// parent domain), but it cannot write this origin's storage: a signed-in
// session the page did not start is shown as the sign-in form, never used,
// and signing in ends it. Without storage (disabled by the user) the check
// is skipped rather than locking the dashboard.
const OWN_SESSION = "plugboard.session";
function ownSession() {
  try { return localStorage.getItem(OWN_SESSION) || ""; } catch (e) { return undefined; }
}
function setOwnSession(csrf) {
  try { if (csrf) localStorage.setItem(OWN_SESSION, csrf); else localStorage.removeItem(OWN_SESSION); } catch (e) { /* no storage */ }
}

// ---- routing ----------------------------------------------------------------

// route parses the hash: "#/VIEW/ID/REST?query" (every view has a deep link;
// the board's filters live in the query).
function route() {
  const hash = location.hash || "#/";
  const [path, query] = hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return {view: parts[0] || "", id: parts[1] || "", rest: parts.slice(2), query: new URLSearchParams(query || "")};
}

// setQuery rewrites the hash's query without a new render (filters typed
// on the board), so the address is always a link to what is shown.
function setQuery(params) {
  const r = route();
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) qs.set(k, v);
  const base = "#/" + [r.view, r.id, ...r.rest].filter(Boolean).map(encodeURIComponent).join("/");
  history.replaceState(null, "", base + (qs.toString() ? "?" + qs : ""));
}

async function render() {
  stopTimers();
  stopLive();
  clearError();
  if (!state.me) state.me = await (await fetch("/ui/api/me")).json();
  const own = ownSession();
  if (state.me.signed_in && state.me.login_required && own !== undefined && state.me.csrf !== own) {
    state.me = {signed_in: false, login_required: true, foreign: true};
  }
  const nav = document.getElementById("nav");
  if (!state.me.signed_in) {
    nav.hidden = true;
    document.getElementById("logout").hidden = true;
    document.getElementById("who").textContent = "";
    return loginView(state.me.foreign);
  }
  nav.hidden = false;
  if (!state.tools) {
    const t = await api("tools");
    state.tools = t.tools ? new Set(t.tools.map((x) => x.name)) : null;
  }
  for (const a of nav.querySelectorAll("[data-operator]")) a.hidden = !state.me.operator;
  for (const a of nav.querySelectorAll("[data-tool]")) a.hidden = !may(a.dataset.tool);
  document.getElementById("who").textContent = state.me.identity + (state.me.role ? " (" + state.me.role + ")" : "");
  document.getElementById("logout").hidden = !state.me.login_required;
  const r = route();
  const section = ["project", "task", "attempt"].includes(r.view) ? "" : r.view;
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === "#/" + section) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const views = {"": boardView, project: boardView, task: taskView, attempt: attemptView, review: reviewView,
    decisions: decisionsView, inbox: inboxView, plugins: pluginsView, hosts: hostsView};
  await (views[r.view] || boardView)(r.id, r);
}

function page(title, ...kids) {
  document.title = title + " — plugboard";
  main().replaceChildren(h("h1", {}, title), ...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
}

// ---- confirmation -----------------------------------------------------------

// confirmDialog asks before something that cannot be undone; resolves true
// when the person confirms. A real <dialog>: focus moves into it, Escape
// cancels, and the page behind is inert.
function confirmDialog(title, text, yes) {
  return new Promise((resolve) => {
    const dlg = h("dialog", {id: "confirm", "aria-labelledby": "confirm-title"},
      h("h2", {id: "confirm-title"}, title), h("p", {}, text),
      h("div", {class: "row"},
        h("button", {type: "button", class: "danger", id: "confirm-yes", onclick: () => { dlg.close("yes"); }}, yes),
        h("button", {type: "button", id: "confirm-no", onclick: () => { dlg.close("no"); }}, "Keep it")));
    dlg.addEventListener("close", () => { dlg.remove(); resolve(dlg.returnValue === "yes"); });
    document.body.append(dlg);
    dlg.showModal();
    dlg.querySelector("#confirm-no").focus();
  });
}

// ---- keyboard shortcuts -----------------------------------------------------

// SHORTCUTS are the page's keys, shown by "?". They act only when no form
// field has the focus, so typing is never taken.
const SHORTCUTS = [
  ["/", "search tasks"], ["n", "new task"], ["j / k", "next / previous card"],
  ["Shift + ← / →", "move the focused card to the previous / next column"],
  ["g b", "board"], ["g r", "review"], ["g d", "decision log"], ["?", "these keys"], ["Esc", "close a dialog, leave a field"],
];

function typing(el) {
  return el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

function onKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const el = document.activeElement;
  if (ev.key === "Escape" && typing(el)) { el.blur(); return; }
  if (typing(el) || document.querySelector("dialog[open]")) return;
  if (state.keys === "g") {
    state.keys = null;
    const to = {b: "#/", r: "#/review", d: "#/decisions"}[ev.key];
    if (to) { ev.preventDefault(); location.hash = to; }
    return;
  }
  const card = el && el.closest && el.closest("a.task");
  switch (ev.key) {
    case "g": state.keys = "g"; setTimeout(() => { state.keys = null; }, 1500); return;
    case "/": { const s = document.getElementById("search"); if (s) { ev.preventDefault(); s.focus(); } return; }
    case "n": { const t = document.getElementById("new-title"); if (t) { ev.preventDefault(); t.focus(); } return; }
    case "?": ev.preventDefault(); showShortcuts(); return;
    case "j": case "k": {
      const cards = [...document.querySelectorAll("#board a.task:not([hidden])")];
      if (!cards.length) return;
      ev.preventDefault();
      const i = cards.indexOf(card);
      cards[Math.max(0, Math.min(cards.length - 1, i < 0 ? 0 : i + (ev.key === "j" ? 1 : -1)))].focus();
      return;
    }
    case "ArrowLeft": case "ArrowRight":
      if (ev.shiftKey && card && typeof moveCard === "function") { ev.preventDefault(); moveCard(card, ev.key === "ArrowRight" ? 1 : -1); }
      return;
  }
}

function showShortcuts() {
  const dlg = h("dialog", {id: "shortcuts", "aria-labelledby": "shortcuts-title"},
    h("h2", {id: "shortcuts-title"}, "Keyboard shortcuts"),
    h("dl", {class: "kv"}, SHORTCUTS.map(([k, what]) => [h("dt", {}, h("kbd", {}, k)), h("dd", {}, what)])),
    h("div", {class: "row"}, h("button", {type: "button", onclick: () => dlg.close()}, "Close")));
  dlg.addEventListener("close", () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
}

// ---- sign in ----------------------------------------------------------------

function loginView(foreign) {
  const input = h("input", {id: "token", type: "password", autocomplete: "current-password", required: true});
  const form = h("form", {class: "card login", id: "login"},
    h("h1", {}, "Sign in"),
    h("p", {class: "muted"}, "This server needs a bearer token: the one plugboard serve was given, or an agent's from the agents file. Identity-provider (OAuth) sign-in is for MCP clients; this page does not take it."),
    foreign ? h("p", {id: "foreign-session"}, "This browser carries a session this page did not start (another site may have set it). " +
      "Sign in to replace it.") : null,
    h("label", {for: "token"}, "Bearer token"), input,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Sign in")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const res = await fetch("/ui/api/login", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({token: input.value})});
    const data = await res.json();
    if (!data.ok) return showError(data.error);
    setOwnSession(data.csrf);
    state.me = null;
    state.tools = null;
    render();
  });
  document.title = "Sign in — plugboard";
  main().replaceChildren(form);
  input.focus();
}

// ---- start ------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  window.addEventListener("hashchange", () => { render(); main().focus(); });
  document.addEventListener("keydown", onKey);
  document.getElementById("logout").addEventListener("click", async () => {
    await api("logout", {});
    setOwnSession("");
    state.me = null;
    state.tools = null;
    render();
  });
  render();
});
