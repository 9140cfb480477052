// plugboard dashboard: one page, no dependencies. Every board action is a
// tool call through /ui/api/call, which runs the host's own pipeline (policy,
// validation, request_id, decision log) as the signed-in identity.
"use strict";

const state = { me: null, timers: [], tools: null };
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
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function showError(env) {
  const box = document.getElementById("alert");
  box.replaceChildren(
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
  const res = await fetch("/ui/api/" + path, opts);
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

function every(ms, fn) { const t = setInterval(fn, ms); state.timers.push(t); }
function stopTimers() { state.timers.forEach(clearInterval); state.timers = []; }

function badge(s) { return s ? h("span", {class: "badge " + s}, s) : null; }
function short(id) { return id ? id.slice(0, 8) : ""; }

// ---- the page's own session ---------------------------------------------------

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

async function render() {
  stopTimers();
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
  const [, view, id] = (location.hash || "#/").match(/^#\/?([^/]*)\/?(.*)$/) || [];
  for (const a of nav.querySelectorAll("a")) {
    const current = a.getAttribute("href") === "#/" + (view === "project" || view === "task" || view === "attempt" ? "" : view);
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const views = {"": boardView, project: boardView, task: taskView, attempt: attemptView, review: reviewView,
    decisions: decisionsView, inbox: inboxView, plugins: pluginsView, hosts: hostsView};
  await (views[view] || boardView)(decodeURIComponent(id || ""));
}

function page(title, ...kids) {
  document.title = title + " — plugboard";
  main().replaceChildren(h("h1", {}, title), ...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
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

// ---- board ------------------------------------------------------------------

const COLUMNS = ["todo", "inprogress", "inreview", "done", "cancelled"];

async function boardView(projectID) {
  if (!may("list_projects") && !state.me.operator) return ownWorkView();
  const projects = await call("list_projects");
  if (!projects) return page("Board");
  if (!projects.projects.length) {
    return page("Board", h("p", {class: "muted"}, "No project yet. Create one: plugboard project create NAME --repo PATH"));
  }
  const current = projects.projects.find((p) => p.project_id === projectID) || projects.projects[0];
  const select = h("select", {id: "project", onchange: (e) => { location.hash = "#/project/" + e.target.value; }},
    projects.projects.map((p) => h("option", {value: p.project_id, selected: p.project_id === current.project_id}, p.name)));
  const board = h("div", {class: "board", id: "board"});
  const title = h("input", {id: "new-title", required: true, maxlength: 200});
  const desc = h("textarea", {id: "new-description"});
  const create = h("form", {class: "card", id: "create-task"},
    h("h2", {}, "New task"), h("label", {for: "new-title"}, "Title"), title,
    h("label", {for: "new-description"}, "Description (the agent's instructions)"), desc,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Create task")));
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = await call("create_task", {project_id: current.project_id, title: title.value, description: desc.value});
    if (t) { title.value = ""; desc.value = ""; clearError(); load(); }
  });
  page("Board", h("div", {class: "row"}, h("div", {}, h("label", {for: "project"}, "Project"), select)), board, may("create_task") ? create : null);
  async function load() {
    const tasks = await call("list_tasks", {project_id: current.project_id, limit: 200});
    if (!tasks) return;
    board.replaceChildren(...COLUMNS.map((status) => h("section", {class: "column", "aria-label": status, "data-status": status},
      h("h2", {}, status),
      tasks.tasks.filter((t) => t.status === status).map((t) => h("a", {class: "task", href: "#/task/" + t.task_id, "data-task": t.task_id},
        h("strong", {}, t.title), h("br"),
        t.has_in_progress_attempt ? badge("running") : t.last_attempt_failed ? badge("failed") : t.latest_attempt_id ? h("span", {class: "muted"}, "attempt " + short(t.latest_attempt_id)) : h("span", {class: "muted"}, "no attempt"))))));
  }
  await load();
  every(3000, load);
}

// ownWorkView is the board of an identity that may not list the board (a
// WORKER): its own task and attempt, through agent_get_task, refreshed like
// the board.
async function ownWorkView() {
  const card = h("div", {class: "card", id: "own-work"});
  page("My work", h("p", {class: "muted"}, "You see the task and attempt assigned to you."), card);
  if (!may("agent_get_task")) {
    card.replaceChildren(h("p", {}, "This identity may call neither list_projects nor agent_get_task; ask the operator to allow one of them for its type in the agents file."));
    return;
  }
  async function load() {
    const got = await tryCall("agent_get_task");
    if (got.error) {
      card.replaceChildren(h("p", {id: "no-work"}, got.error.message), got.error.hint ? h("p", {class: "muted"}, got.error.hint) : null);
      return;
    }
    const t = got.result.task, a = got.result.attempt;
    const attemptID = a ? a.attempt_id : t.latest_attempt_id;
    card.replaceChildren(h("h2", {}, t.title), h("dl", {class: "kv"},
      h("dt", {}, "Status"), h("dd", {}, badge(t.status)),
      h("dt", {}, "Task id"), h("dd", {class: "mono"}, t.task_id),
      h("dt", {}, "Description"), h("dd", {}, t.description || "—"),
      h("dt", {}, "Attempt"), h("dd", {}, attemptID ? [h("a", {href: "#/attempt/" + attemptID, id: "own-attempt"}, short(attemptID)), " ",
        a ? badge(a.state) : t.has_in_progress_attempt ? badge("running") : t.last_attempt_failed ? badge("failed") : null] : "no attempt yet")));
  }
  await load();
  every(3000, load);
}

// ---- task -------------------------------------------------------------------

async function taskView(taskID) {
  const task = await call("get_task", {task_id: taskID});
  if (!task) return page("Task");
  const attempts = await call("list_task_attempts", {task_id: taskID});
  // list_task_attempts says no state: each attempt's comes from its status.
  const states = await Promise.all((attempts ? attempts.attempts : []).map(async (a) => {
    const s = await tryCall("get_attempt_status", {attempt_id: a.attempt_id});
    return s.result ? s.result.state : null;
  }));
  const executors = await call("list_executors");
  const exec = executorSelect(executors ? executors.executors : []);
  const none = !exec.querySelector("option[data-available]");
  const start = h("form", {class: "card", id: "start-attempt"}, h("h2", {}, "Start an attempt"),
    h("label", {for: "executor"}, "Executor"), exec,
    none ? h("p", {class: "muted", id: "no-executor"}, "No executor's CLI is installed on this host; install one (`plugboard attempt executors` lists them).") : null,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Start")));
  start.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const s = await call("start_task_attempt", {task_id: taskID, executor: exec.value});
    if (s) location.hash = "#/attempt/" + s.attempt_id;
  });
  const rows = (attempts ? attempts.attempts : []).map((a, i) => h("tr", {"data-attempt": a.attempt_id},
    h("td", {}, h("a", {href: "#/attempt/" + a.attempt_id}, short(a.attempt_id))),
    h("td", {}, a.executor), h("td", {class: "state"}, states[i] ? badge(states[i]) : "—"), h("td", {class: "mono"}, a.workspace_branch), h("td", {}, a.created_at)));
  page(task.title,
    h("div", {class: "card"}, h("dl", {class: "kv"},
      h("dt", {}, "Status"), h("dd", {}, badge(task.status)),
      h("dt", {}, "Task id"), h("dd", {class: "mono"}, task.task_id),
      h("dt", {}, "Description"), h("dd", {}, task.description || "—"))),
    h("h2", {}, "Attempts"),
    rows.length ? h("table", {id: "attempts"}, h("thead", {}, h("tr", {}, ["Attempt", "Executor", "State", "Branch", "Created"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", {class: "muted"}, "No attempt yet."),
    may("start_task_attempt") ? start : null);
}

// executorSelect is the executor menu: every executor, the installed ones
// marked and the first of them selected (start_task_attempt refuses one
// whose CLI is missing, so preselecting that would make Start fail).
function executorSelect(executors) {
  const installed = executors.filter((e) => e.available);
  const chosen = installed.length ? installed[0].executor : "";
  return h("select", {id: "executor"}, executors.map((e) => h("option", {value: e.executor, selected: e.executor === chosen,
    "data-available": e.available ? "true" : null}, e.executor + (e.available ? " (installed)" : " (not installed)"))));
}

// ---- attempt ----------------------------------------------------------------

async function attemptView(attemptID) {
  const status = await call("get_attempt_status", {attempt_id: attemptID});
  if (!status) return page("Attempt");
  const info = h("div", {class: "card", id: "status"});
  function showStatus(s) {
    info.replaceChildren(h("dl", {class: "kv"},
      h("dt", {}, "State"), h("dd", {id: "state"}, badge(s.state)),
      h("dt", {}, "Task"), h("dd", {}, h("a", {href: may("get_task") ? "#/task/" + s.task_id : "#/"}, short(s.task_id)), " ", badge(s.task_status)),
      h("dt", {}, "Executor"), h("dd", {}, s.executor),
      h("dt", {}, "Branch"), h("dd", {class: "mono"}, s.workspace_branch),
      s.failure_summary ? [h("dt", {}, "Failure"), h("dd", {}, s.failure_summary)] : null,
      h("dt", {}, "Follow-up queued"), h("dd", {id: "queued"}, s.queued_follow_up && may("follow_up") ? ["yes ",
        h("button", {type: "button", id: "cancel-queued", onclick: async () => {
          if (await call("follow_up", {action: "cancel", attempt_id: attemptID})) { clearError(); refresh(); }
        }}, "Cancel it")] : s.queued_follow_up ? "yes" : "no")));
  }
  showStatus(status);
  const stop = h("button", {class: "danger", type: "button", id: "stop"}, "Stop");
  stop.addEventListener("click", async () => { const r = await call("stop_attempt", {attempt_id: attemptID}); if (r) { clearError(); refresh(); } });

  // Live log: the newest page, then what follows it.
  let channel = "normalized", last = null;
  const log = h("div", {class: "log mono", id: "log", role: "log", "aria-live": "polite", tabindex: "0"});
  const tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Log channel"},
    ["normalized", "raw"].map((c) => h("button", {type: "button", role: "tab", "aria-selected": c === channel ? "true" : "false", "data-channel": c,
      onclick: () => { channel = c; last = null; log.replaceChildren(); for (const b of tabs.children) b.setAttribute("aria-selected", b.dataset.channel === c ? "true" : "false"); follow(); }}, c)));
  async function follow() {
    const args = {attempt_id: attemptID, channel: channel, limit: 200};
    if (last !== null) args.after_entry_index = last;
    const got = await call("tail_attempt_logs", args);
    if (!got) return;
    for (const e of got.entries) {
      log.append(h("span", {class: "e " + (e.entry_type || e.stream || ""), "data-index": e.entry_index}, e.content));
      last = e.entry_index;
    }
    if (got.entries.length) log.scrollTop = log.scrollHeight;
  }
  // A run that ends changes the worktree and the transcript: reload them.
  let shownState = status.state;
  async function refresh() {
    const s = await call("get_attempt_status", {attempt_id: attemptID});
    if (!s) return;
    showStatus(s);
    if (s.state !== shownState) { shownState = s.state; loadChanges(false); loadTranscript(); }
  }

  // Follow-up.
  const prompt = h("textarea", {id: "follow-prompt"});
  const followForm = h("form", {class: "card", id: "follow-up"}, h("h2", {}, "Follow-up"),
    h("label", {for: "follow-prompt"}, "Message for the agent"), prompt,
    h("div", {class: "row"},
      h("button", {type: "submit", class: "primary", value: "send"}, "Send now"),
      h("button", {type: "button", id: "queue", onclick: () => sendFollowUp("queue")}, "Queue for after the run")));
  followForm.addEventListener("submit", (ev) => { ev.preventDefault(); sendFollowUp("send"); });
  async function sendFollowUp(action) {
    const r = await call("follow_up", {action: action, attempt_id: attemptID, prompt: prompt.value});
    if (r) { prompt.value = ""; clearError(); refresh(); }
  }

  const changes = h("div", {id: "changes"}), diff = h("div", {id: "diff"}), file = h("div", {id: "file"}), transcript = h("div", {id: "transcript"});
  async function loadChanges(force) {
    const c = await call("get_attempt_changes", {attempt_id: attemptID, force: !!force});
    if (!c) return;
    const s = c.summary;
    changes.replaceChildren(h("div", {class: "card"},
      h("p", {}, `${s.file_count} files, +${s.added} −${s.deleted}`),
      c.blocked ? h("div", {class: "alert", role: "status"}, "Guard: " + (c.reason || c.blocked_reason), c.hint ? h("div", {class: "hint"}, c.hint) : null,
        h("button", {type: "button", onclick: () => loadChanges(true)}, "Show anyway")) : null,
      h("table", {}, h("tbody", {}, c.files.map((f) => h("tr", {},
        h("td", {}, h("a", {href: "#", onclick: (ev) => { ev.preventDefault(); loadFile(f.path); }}, f.path)),
        h("td", {}, f.status || ""), h("td", {}, "+" + f.added), h("td", {}, "−" + f.deleted)))))));
  }
  async function loadDiff() {
    const p = await call("get_attempt_patch", {attempt_id: attemptID});
    if (!p) return;
    diff.replaceChildren(p.blocked ? h("p", {}, p.reason || "blocked", p.hint ? " — " + p.hint : "") :
      h("div", {class: "diff mono"}, p.patch.split("\n").map((l) => h("span", {class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : ""}, l + "\n"))));
  }
  async function loadFile(path) {
    const f = await call("get_attempt_file", {attempt_id: attemptID, path: path});
    if (!f) return;
    file.replaceChildren(h("div", {class: "card"}, h("h2", {}, path), f.blocked ? h("p", {}, f.hint || "blocked") : h("pre", {class: "diff"}, f.content)));
  }
  async function loadTranscript() {
    const m = await call("tail_session_messages", {attempt_id: attemptID});
    if (!m) return;
    transcript.replaceChildren(...m.messages.map((t) => h("div", {class: "card"},
      h("div", {class: "muted"}, "Turn " + t.turn_index), h("div", {}, h("strong", {}, "Prompt: "), t.prompt),
      t.summary ? h("div", {}, h("strong", {}, "Summary: "), t.summary) : null)));
  }

  page("Attempt " + short(attemptID), info, may("stop_attempt") ? h("div", {class: "row"}, stop) : null,
    h("h2", {}, "Log"), tabs, log,
    may("follow_up") ? followForm : null,
    h("details", {open: true, ontoggle: () => {}}, h("summary", {}, "Changes"), changes),
    h("details", {id: "diff-section"}, h("summary", {}, "Diff"), diff), file,
    h("details", {id: "transcript-section"}, h("summary", {}, "Transcript"), transcript));
  document.getElementById("diff-section").addEventListener("toggle", (e) => { if (e.target.open) loadDiff(); });
  await follow();
  loadChanges(false);
  loadTranscript();
  every(1000, follow);
  every(3000, refresh);
}

// ---- review -----------------------------------------------------------------

async function reviewView() {
  const q = await call("review_queue", {});
  if (!q) return page("Review");
  const items = q.tasks.map((t) => {
    const feedback = h("textarea", {id: "feedback-" + t.task_id, "aria-label": "Feedback for " + t.title});
    return h("div", {class: "card review", "data-task": t.task_id},
      h("h2", {}, h("a", {href: "#/task/" + t.task_id}, t.title)),
      t.attempt_id ? h("p", {}, h("a", {href: "#/attempt/" + t.attempt_id}, "attempt " + short(t.attempt_id)), " ", badge(t.state),
        t.changes ? ` ${t.changes.file_count} files, +${t.changes.added} −${t.changes.deleted}` : t.changes_error ? " changes: " + t.changes_error : "") : null,
      h("div", {class: "row"},
        h("button", {class: "primary", type: "button", "data-approve": t.attempt_id, onclick: async () => {
          const r = await call("approve_attempt", {attempt_id: t.attempt_id});
          // The answer says what was merged, per repo, and what was not: never "merged" when nothing was.
          const said = (r && r.merged ? "Approved and merged: " : "Approved, nothing merged: ") + t.title +
            (r && r.summary ? " (" + r.summary + ")" : "") + (r && r.warnings && r.warnings.length ? ". " + r.warnings.join(" ") : "");
          if (r) { clearError(); reviewView().then(() => notice(said)); }
        }}, "Approve")),
      h("label", {for: "feedback-" + t.task_id}, "Request changes"), feedback,
      h("div", {class: "row"}, h("button", {type: "button", "data-request-changes": t.attempt_id, onclick: async () => {
        const r = await call("request_changes", {attempt_id: t.attempt_id, feedback: feedback.value});
        if (r) { clearError(); reviewView().then(() => notice("Feedback sent: " + t.title)); }
      }}, "Request changes")));
  });
  page("Review", items.length ? items : h("p", {class: "muted", id: "review-empty"}, "Nothing waits for review."));
}

function notice(text) { main().prepend(h("div", {class: "notice", role: "status"}, text)); }

// ---- decision log -----------------------------------------------------------

// OUTCOMES suggests the outcome filter's values: ok, error (any code),
// invoked (still running) and the registered error codes.
const OUTCOMES = ["ok", "error", "invoked", "invalid_argument", "missing_required", "not_found", "conflict", "permission_denied",
  "tool_not_found", "idempotency_conflict", "plugin_timeout", "plugin_failed", "tool_error", "resource_exhausted", "cancelled",
  "unavailable", "internal"];

// The log's rows are filtered by the server (caller, tool, outcome, a range
// of start times); a row opens to what was recorded of its call.
async function decisionsView() {
  const agent = h("input", {id: "f-agent", maxlength: 256}), tool = h("input", {id: "f-tool", maxlength: 256});
  const outcome = h("input", {id: "f-outcome", list: "outcomes", maxlength: 64, placeholder: "any"});
  const since = h("input", {id: "f-since", type: "datetime-local"}), until = h("input", {id: "f-until", type: "datetime-local"});
  const body = h("tbody", {}), detail = h("div", {id: "decision-detail"});
  const form = h("form", {class: "row card", id: "decision-filter"},
    h("div", {}, h("label", {for: "f-agent"}, "Caller"), agent),
    h("div", {}, h("label", {for: "f-tool"}, "Tool"), tool),
    h("div", {}, h("label", {for: "f-outcome"}, "Outcome"), outcome,
      h("datalist", {id: "outcomes"}, OUTCOMES.map((o) => h("option", {value: o})))),
    h("div", {}, h("label", {for: "f-since"}, "Started from"), since),
    h("div", {}, h("label", {for: "f-until"}, "Started before"), until),
    h("button", {type: "submit"}, "Filter"),
    h("button", {type: "button", id: "f-clear", onclick: () => { for (const i of [agent, tool, outcome, since, until]) i.value = ""; clearError(); load(); }}, "Clear"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); clearError(); load(); });
  page("Decision log", form, detail, h("div", {class: "wide"}, h("table", {id: "decisions"},
    h("thead", {}, h("tr", {}, ["Time", "Caller", "Tool", "Status", "Duration", "Error"].map((c) => h("th", {scope: "col"}, c)))), body)));
  // seq drops the answer of a load a later one overtook (a poll sent before
  // the filter changed); shown skips redrawing rows that did not change,
  // so a click is not lost to a row redrawn under the pointer.
  let seq = 0, shown = "";
  async function load() {
    const qs = new URLSearchParams({limit: "100"});
    for (const [k, el] of [["agent", agent], ["tool", tool], ["outcome", outcome]]) if (el.value.trim()) qs.set(k, el.value.trim());
    for (const [k, el] of [["from", since], ["to", until]]) if (el.value) qs.set(k, new Date(el.value).toISOString());
    const mine = ++seq;
    const rows = await operatorRead("decisions?" + qs);
    if (mine !== seq) return;
    if (!rows) { body.replaceChildren(); shown = ""; return; }
    const text = JSON.stringify(rows);
    if (text === shown) return;
    shown = text;
    body.replaceChildren(...rows.map((d) => h("tr", {"data-decision": d.id},
      h("td", {class: "mono"}, h("button", {type: "button", class: "link", "data-open": d.id, onclick: () => openDecision(d.id)}, d.created_at)),
      h("td", {}, d.agent_id || "—", d.agent_type ? h("span", {class: "muted"}, " " + d.agent_type) : null),
      h("td", {}, d.tool || d.title), h("td", {}, badge(d.status)),
      h("td", {}, d.duration_ms === null || d.duration_ms === undefined ? "" : d.duration_ms + " ms"), h("td", {}, d.error_code || ""))));
  }
  async function openDecision(id) {
    const d = await operatorRead("decision?id=" + encodeURIComponent(id));
    if (!d) return;
    detail.replaceChildren(decisionCard(d, () => detail.replaceChildren()));
    detail.querySelector("h2").focus();
  }
  await load();
  every(2000, load);
}

// decisionCard shows one row whole: who called what with which input (as
// stored: sensitive fields and the plugin's secrets masked), the result or
// the envelope, the HTTP requests the plugin made, and how long it took.
function decisionCard(d, close) {
  const envelope = d.error && typeof d.error === "object" ? d.error : null;
  const http = Array.isArray(d.http) ? d.http : [];
  return h("section", {class: "card decision", "aria-label": "Decision " + d.id},
    h("div", {class: "row"}, h("h2", {tabindex: "-1"}, (d.tool || d.title) + " ", badge(d.status)),
      h("button", {type: "button", id: "close-decision", onclick: close}, "Close")),
    h("dl", {class: "kv"},
      h("dt", {}, "Caller"), h("dd", {id: "d-caller"}, (d.agent_id || "—") + (d.agent_type ? " (" + d.agent_type + ")" : "")),
      h("dt", {}, "Started"), h("dd", {class: "mono"}, d.created_at),
      h("dt", {}, "Finished"), h("dd", {class: "mono"}, d.finished_at || "not yet"),
      h("dt", {}, "Duration"), h("dd", {id: "d-duration"}, d.duration_ms === null || d.duration_ms === undefined ? "—" : d.duration_ms + " ms"),
      h("dt", {}, "Runs"), h("dd", {}, String(d.attempts || 0)),
      d.request_id ? [h("dt", {}, "Request id"), h("dd", {class: "mono"}, d.request_id)] : null,
      h("dt", {}, "Row id"), h("dd", {class: "mono"}, d.id)),
    d.kind === "decision" ? [h("h3", {}, d.title), h("p", {id: "d-body"}, d.body)] : null,
    h("h3", {}, "Input"), payload("d-input", d.input),
    envelope ? [h("h3", {}, "Error"), h("dl", {class: "kv", id: "d-error"},
      h("dt", {}, "Code"), h("dd", {class: "mono"}, envelope.code || d.error_code),
      h("dt", {}, "Message"), h("dd", {}, envelope.message || ""),
      envelope.hint ? [h("dt", {}, "Hint"), h("dd", {}, envelope.hint)] : null,
      h("dt", {}, "Retryable"), h("dd", {}, envelope.retryable ? "yes" : "no"),
      envelope.details ? [h("dt", {}, "Details"), h("dd", {}, payload("d-details", envelope.details))] : null)]
      : [h("h3", {}, "Result"), payload("d-result", d.result,
        d.status === "invoked" ? "Not finished yet." : "No structured result (an answer of text only is not kept).")],
    h("h3", {}, "HTTP requests"),
    http.length ? h("div", {class: "wide"}, h("table", {id: "d-http"},
      h("thead", {}, h("tr", {}, ["Method", "URL", "Status", "Bytes", "Duration", "Error"].map((c) => h("th", {scope: "col"}, c)))),
      h("tbody", {}, http.map((r) => h("tr", {}, h("td", {}, r.method), h("td", {class: "mono"}, r.url), h("td", {}, r.status ? String(r.status) : "—"),
        h("td", {}, String(r.bytes)), h("td", {}, r.duration_ms + " ms"), h("td", {}, r.error || ""))))))
      : h("p", {class: "muted", id: "d-http-none"}, d.http && d.http.truncated ? "" : "None."),
    d.http && d.http.truncated ? payload("d-http-capped", d.http) : null);
}

// payload shows a stored JSON value; one the log capped (longer than its
// payload limit) is shown as its size, hash and first bytes.
function payload(id, v, none) {
  if (v === null || v === undefined) return h("p", {class: "muted", id: id}, none || "—");
  if (typeof v === "object" && v.truncated === true && typeof v.sha256 === "string") {
    return h("div", {id: id}, h("p", {class: "muted"}, `Stored capped: ${v.bytes} bytes, SHA-256 ${v.sha256}. The first bytes:`),
      h("pre", {class: "diff"}, v.prefix));
  }
  return h("pre", {class: "diff", id: id}, JSON.stringify(v, null, 2));
}

// ---- inbox ------------------------------------------------------------------

async function inboxView() {
  const inbox = await operatorRead("inbox?include_read=true");
  if (!inbox) return page("Inbox");
  page("Inbox (human)", inbox.mails.length ? inbox.mails.map((m) => {
    const reply = h("textarea", {id: "reply-" + m.mail_id, "aria-label": "Reply to " + m.subject});
    return h("div", {class: "card mail", "data-mail": m.mail_id},
      h("h2", {}, m.subject, " ", m.read_at ? null : badge("unread")),
      h("p", {class: "muted"}, "From " + m.from_agent_id + " · " + m.created_at),
      h("p", {}, m.body),
      m.read_at ? null : h("button", {type: "button", onclick: async () => { if (await operatorRead("inbox/read", {mail_id: m.mail_id})) inboxView(); }}, "Mark read"),
      h("label", {for: "reply-" + m.mail_id}, "Reply"), reply,
      h("div", {class: "row"}, h("button", {type: "button", onclick: async () => {
        if (await operatorRead("inbox/reply", {mail_id: m.mail_id, body: reply.value})) { inboxView().then(() => notice("Reply sent")); }
      }}, "Send reply")));
  }) : h("p", {class: "muted"}, "No mail for the human inbox."));
}

// ---- plugins ----------------------------------------------------------------

async function pluginsView() {
  const p = await operatorRead("plugins");
  if (!p) return page("Plugins");
  page("Plugins",
    p.plugins.map((pl) => h("div", {class: "card plugin", "data-plugin": pl.name},
      h("h2", {}, pl.name + " " + (pl.version || "")),
      h("p", {class: "muted"}, pl.description || ""),
      h("dl", {class: "kv"},
        h("dt", {}, "File"), h("dd", {class: "mono"}, pl.path),
        h("dt", {}, "Compiled"), h("dd", {}, pl.loaded ? "loaded" : pl.compiled ? "compiled (unloaded while idle)" : "not yet"),
        h("dt", {}, "Idle instances"), h("dd", {}, String(pl.idle_instances ?? 0)),
        h("dt", {}, "Capabilities granted"), h("dd", {}, (pl.granted || []).join(", ") || "none"),
        h("dt", {}, "Withheld"), h("dd", {}, (pl.withheld || []).join(", ") || "none")),
      pluginNeeds(pl), pluginSettings(pl),
      h("details", {}, h("summary", {}, `${pl.tools.length} tools`),
        pl.tools.map((t) => h("div", {class: "card"}, h("strong", {}, t.name), h("pre", {class: "mono"}, t.description),
          h("details", {}, h("summary", {}, "Input schema"), h("pre", {class: "mono"}, JSON.stringify(t.input_schema, null, 2)))))))),
    p.problems.length ? [h("h2", {}, "Problems"), p.problems.map((x) => h("div", {class: "alert"}, x.path + ": " + x.error))] : null);
}

// pluginNeeds lists what a plugin declares it needs, each with its status
// under the settings in force; the server sends names and statuses, never a
// value.
function pluginNeeds(pl) {
  const needs = pl.needs || [];
  if (!needs.length) return h("p", {class: "muted needs-none"}, "Declares no needs.");
  const missing = needs.filter((n) => n.status === "missing" || n.status === "not_allowed");
  const unmet = missing.filter((n) => n.kind === "config" && n.required).length;
  const summary = unmet ? "needs configuration" : missing.length ? missing.length + " not given" : "all given";
  return [h("h3", {}, "Needs ", h("span", {class: "badge " + (missing.length ? "need-unmet" : "need-met")}, summary)),
    h("div", {class: "wide"}, h("table", {class: "needs"},
      h("thead", {}, h("tr", {}, ["Need", "What for", "Status", "Setting"].map((c) => h("th", {scope: "col"}, c)))),
      h("tbody", {}, needs.map((n) => h("tr", {"data-need": n.name, "data-status": n.status},
        h("td", {class: "mono"}, n.kind + " " + n.name, n.paths && n.paths.length ? " " + n.paths.join(" ") : ""),
        h("td", {}, n.description || "", n.kind === "config" ? h("span", {class: "muted"}, (n.description ? " · " : "") +
          (n.required ? "required" : "optional") + (n.secret ? ", secret" : "")) : null),
        h("td", {}, h("span", {class: "badge need-" + n.status}, n.status.replace("_", " "))),
        h("td", {class: "mono"}, n.setting))))))];
}

// pluginSettings shows the operator's settings in force for a plugin, by
// name: configuration keys as set or empty, hosts, mounts.
function pluginSettings(pl) {
  const s = pl.settings || {config: [], allowed_hosts: [], mounts: []};
  const keys = s.config.map((c) => c.key + " (" + c.status + (c.secret ? ", secret" : "") + (pl.needs && pl.needs.length && !c.declared ? ", not declared" : "") + ")");
  return [h("h3", {}, "Settings in force"), h("dl", {class: "kv settings"},
    h("dt", {}, "Config"), h("dd", {class: "mono", "data-setting": "config"}, keys.join(", ") || "none"),
    h("dt", {}, "Allowed hosts"), h("dd", {class: "mono", "data-setting": "allowed_hosts"}, s.allowed_hosts.join(", ") || "none: no network"),
    s.allow_private ? [h("dt", {}, "Private addresses"), h("dd", {}, "allowed")] : null,
    h("dt", {}, "Directories"), h("dd", {class: "mono"}, s.mounts.map((m) => m.mount + " ← " + m.path + (m.writable ? " (writable)" : " (read-only)")).join(", ") || "none"),
    s.stateful ? [h("dt", {}, "Stateful"), h("dd", {}, "yes")] : null,
    s.call_timeout ? [h("dt", {}, "Call timeout"), h("dd", {}, s.call_timeout)] : null)];
}

// ---- hosts ------------------------------------------------------------------

// The hosts sharing the board's store, refreshed like the other live views.
async function hostsView() {
  const body = h("tbody", {});
  page("Hosts",
    h("p", {class: "muted"}, "Every host that has served this board's store. A host that is down has its running attempts marked killed by the others."),
    h("div", {class: "wide"}, h("table", {id: "hosts"},
      h("thead", {}, h("tr", {}, ["Host", "State", "Processes", "Last seen", "Running attempts", "Attempt sandbox"].map((c) => h("th", {scope: "col"}, c)))),
      body)));
  async function load() {
    const hosts = await operatorRead("hosts");
    if (!hosts) return;
    body.replaceChildren(...hosts.map((x) => h("tr", {"data-host": x.host_id},
      h("td", {class: "mono"}, x.host_id, x.this ? " (this host)" : ""),
      h("td", {}, badge(x.alive ? "alive" : "down")),
      h("td", {}, String(x.processes)), h("td", {class: "mono"}, x.last_seen || "—"), h("td", {}, String(x.running_attempts)),
      h("td", {class: "sandbox"}, x.sandbox || "—"))));
  }
  await load();
  every(3000, load);
}

// ---- start ------------------------------------------------------------------

window.addEventListener("hashchange", () => { render(); main().focus(); });
document.getElementById("logout").addEventListener("click", async () => {
  await api("logout", {});
  setOwnSession("");
  state.me = null;
  state.tools = null;
  render();
});
render();
