// plugboard dashboard: the board (live columns, search and filters, cards
// dragged between columns), a task (edit, cancel, delete, start an
// attempt) and a WORKER's own work. Uses app.js's helpers.
"use strict";

const COLUMNS = ["todo", "inprogress", "inreview", "done", "cancelled"];
const COLUMN_TITLES = {todo: "To do", inprogress: "In progress", inreview: "In review", done: "Done", cancelled: "Cancelled"};

// ---- board ------------------------------------------------------------------

async function boardView(projectID, r) {
  if (!may("list_projects") && !state.me.operator) return ownWorkView();
  const projects = await call("list_projects");
  if (!projects) return page("Board");
  if (!projects.projects.length) {
    return page("Board", h("p", {class: "muted", id: "no-project"}, state.me.operator ? "No project yet: create one below, or run plugboard project create NAME --repo PATH." :
      "No project yet. The operator creates one: plugboard project create NAME --repo PATH"), state.me.operator ? projectForms(null) : null);
  }
  const current = projects.projects.find((p) => p.project_id === projectID) || projects.projects[0];
  const q = r ? r.query : new URLSearchParams();
  const select = h("select", {id: "project", onchange: (e) => { location.hash = "#/project/" + e.target.value; }},
    projects.projects.map((p) => h("option", {value: p.project_id, selected: p.project_id === current.project_id}, p.name)));

  // Filters: text, status, executor, running. Their values are the hash's
  // query, so a filtered board is a link.
  const search = h("input", {id: "search", type: "search", placeholder: "Search title, description or id  ( / )", value: q.get("q") || "", autocomplete: "off"});
  const fStatus = h("select", {id: "f-status"}, h("option", {value: ""}, "any status"),
    COLUMNS.map((s) => h("option", {value: s, selected: q.get("status") === s}, COLUMN_TITLES[s])));
  const fExec = h("select", {id: "f-executor"}, h("option", {value: ""}, "any executor"));
  const fRunning = h("input", {id: "f-running", type: "checkbox", checked: q.get("running") === "1"});
  const count = h("span", {id: "match-count", class: "muted", role: "status"});
  const toolbar = h("form", {class: "toolbar", id: "filters", role: "search", onsubmit: (e) => e.preventDefault()},
    h("div", {}, h("label", {for: "project"}, "Project"), select),
    h("div", {class: "grow"}, h("label", {for: "search"}, "Search"), search),
    h("div", {}, h("label", {for: "f-status"}, "Status"), fStatus),
    h("div", {}, h("label", {for: "f-executor"}, "Executor"), fExec),
    h("div", {class: "check"}, fRunning, h("label", {for: "f-running"}, "Running only")),
    h("div", {}, count, " ", h("button", {type: "button", class: "link", onclick: showShortcuts}, "Keys (?)")));

  const board = h("div", {class: "board", id: "board"});
  const columns = {};
  for (const s of COLUMNS) {
    const n = h("span", {class: "count"});
    columns[s] = {el: h("section", {class: "column", "aria-labelledby": "col-" + s, "data-status": s},
      h("h2", {id: "col-" + s}, COLUMN_TITLES[s], " ", n)), count: n};
    board.append(columns[s].el);
  }
  const title = h("input", {id: "new-title", required: true, maxlength: 500});
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
  const truncated = h("div", {class: "notice", id: "truncated", role: "status", hidden: true});
  // The cards are read before the page is drawn (below), so the forms under
  // the board do not move once shown.
  const draw = () => page("Board", h("div", {class: "row between"}, h("span", {id: "live", class: "live", hidden: true}), null),
    truncated, toolbar, board, h("p", {id: "drag-help", class: "sr-only"}, "Drag to another column, or press Shift and an arrow key, to change the task's status."), may("create_task") ? create : null, state.me.operator ? projectForms(current) : null);

  // cards keeps each shown card by task id, with the JSON it was drawn
  // from: a load redraws only the cards whose task changed, and moves a
  // card only when its column's order changed, so focus and a drag in
  // progress survive an update.
  const cards = new Map();
  let tasks = [];
  function matches(t) {
    const text = search.value.trim().toLowerCase();
    if (text && !(t.title.toLowerCase().includes(text) || (t.description || "").toLowerCase().includes(text) || t.task_id.startsWith(text))) return false;
    if (fStatus.value && t.status !== fStatus.value) return false;
    if (fExec.value && executorOf(t) !== fExec.value) return false;
    if (fRunning.checked && !t.has_in_progress_attempt) return false;
    return true;
  }
  function applyFilters() {
    let shown = 0;
    const per = Object.fromEntries(COLUMNS.map((s) => [s, 0]));
    for (const t of tasks) {
      const c = cards.get(t.task_id);
      const ok = matches(t);
      c.el.hidden = !ok;
      if (ok) { shown++; per[t.status] = (per[t.status] || 0) + 1; }
    }
    for (const s of COLUMNS) columns[s].count.textContent = String(per[s]);
    count.textContent = shown === tasks.length ? `${tasks.length} tasks` : `${shown} of ${tasks.length} tasks`;
    setQuery({q: search.value.trim(), status: fStatus.value, executor: fExec.value, running: fRunning.checked ? "1" : ""});
  }
  // wantExec is the executor filter chosen, kept while the menu is redrawn
  // from the tasks (an executor may come and go with them).
  let wantExec = q.get("executor") || "";
  fExec.addEventListener("input", () => { wantExec = fExec.value; });
  for (const el of [search, fStatus, fExec, fRunning]) el.addEventListener("input", applyFilters);

  const load = serial(async () => {
    const data = await api("board?project_id=" + encodeURIComponent(current.project_id));
    if (!data.ok) { showError(data.error || {message: "failed"}); return; }
    tasks = data.result.tasks;
    const seen = new Set();
    const order = Object.fromEntries(COLUMNS.map((s) => [s, []]));
    for (const t of tasks) {
      seen.add(t.task_id);
      const json = JSON.stringify(t);
      let c = cards.get(t.task_id);
      if (!c || c.json !== json) {
        const el = taskCard(t);
        if (c) { const focused = document.activeElement === c.el; c.el.replaceWith(el); if (focused) el.focus(); }
        c = {el: el, json: json, task: t};
        cards.set(t.task_id, c);
      }
      (order[t.status] || order.todo).push(c.el);
    }
    for (const [id, c] of cards) if (!seen.has(id)) { c.el.remove(); cards.delete(id); }
    for (const s of COLUMNS) {
      const col = columns[s].el, want = order[s];
      const have = [...col.querySelectorAll(":scope > a.task")];
      if (have.length !== want.length || have.some((el, i) => el !== want[i])) {
        const focused = document.activeElement;
        for (const el of have) if (!want.includes(el)) el.remove();
        col.append(...want);
        if (focused && want.includes(focused)) focused.focus();
      }
    }
    truncated.hidden = !data.result.truncated;
    truncated.textContent = `Showing the newest ${tasks.length} tasks of the project.`;
    const execs = [...new Set(tasks.map(executorOf).filter(Boolean))].sort();
    if (wantExec && !execs.includes(wantExec)) execs.push(wantExec);
    fill(fExec, h("option", {value: ""}, "any executor"), execs.map((e) => h("option", {value: e, selected: e === wantExec}, e)));
    applyFilters();
    tickClocks();
  });

  // moveCard moves a card to the column dir steps away (keyboard), and
  // dropCard to a column (drag): both are update_task through the tools.
  window.moveCard = (card, dir) => {
    const t = cards.get(card.dataset.task);
    if (!t) return;
    const to = COLUMNS[COLUMNS.indexOf(t.task.status) + dir];
    if (to) setStatus(t, to);
  };
  async function setStatus(c, to) {
    if (c.task.status === to) return;
    const col = columns[to].el;
    col.insertBefore(c.el, col.querySelector(":scope > a.task"));
    c.el.focus();
    const res = await call("update_task", {task_id: c.task.task_id, status: to});
    if (res) clearError();
    load();
  }
  enableDrag(board, (taskID, status) => { const c = cards.get(taskID); if (c) setStatus(c, status); });

  await load();
  draw();
  tickClocks();
  watch({project: current.project_id}, () => load());
  every(1000, tickClocks);
}

function executorOf(t) { return (t.running && t.running.executor) || t.latest_session_executor || ""; }

// taskCard draws one task: its title, and for a running attempt a live
// marker, the time it has run and how long ago it last did something.
function taskCard(t) {
  const run = t.running;
  return h("a", {class: "task" + (run ? " is-running" : ""), href: "#/task/" + t.task_id, "data-task": t.task_id, draggable: "false",
    "aria-describedby": "drag-help"},
    h("strong", {}, t.title),
    h("div", {class: "meta"},
      run ? [h("span", {class: "badge running"}, h("span", {class: "pulse", "aria-hidden": "true"}), "running"), " ",
        h("span", {class: "elapsed", title: "running for", "data-since": run.started_at}, ago(run.started_at)),
        h("span", {class: "muted"}, " · active "), h("span", {class: "activity", "data-since": run.last_activity_at || run.started_at},
          ago(run.last_activity_at || run.started_at)), h("span", {class: "muted"}, " ago")]
        : t.last_attempt_failed ? badge("failed")
          : t.latest_attempt_id ? h("span", {class: "muted"}, "attempt " + short(t.latest_attempt_id)) : h("span", {class: "muted"}, "no attempt"),
      executorOf(t) ? h("span", {class: "muted exec"}, " " + executorOf(t)) : null));
}

// enableDrag lets a mouse or pen drag a card to another column (pointer
// events, so real input moves it and touch keeps scrolling); a drag that
// ends on another column calls drop(taskID, status). A card that moved
// less than a few pixels was clicked, and opens.
function enableDrag(board, drop) {
  let drag = null;
  board.addEventListener("pointerdown", (ev) => {
    const card = ev.target.closest("a.task");
    if (!card || ev.button !== 0 || ev.pointerType === "touch") return;
    drag = {card: card, x: ev.clientX, y: ev.clientY, id: ev.pointerId, moving: false, ghost: null, target: null};
  });
  board.addEventListener("pointermove", (ev) => {
    if (!drag || ev.pointerId !== drag.id) return;
    if (!drag.moving) {
      if (Math.hypot(ev.clientX - drag.x, ev.clientY - drag.y) < 6) return;
      drag.moving = true;
      board.setPointerCapture(ev.pointerId);
      drag.card.classList.add("dragging");
      drag.ghost = drag.card.cloneNode(true);
      drag.ghost.classList.add("ghost");
      drag.ghost.removeAttribute("href");
      drag.ghost.setAttribute("aria-hidden", "true");
      drag.ghost.style.width = drag.card.offsetWidth + "px";
      document.body.append(drag.ghost);
    }
    ev.preventDefault();
    drag.ghost.style.left = (ev.clientX + 4) + "px";
    drag.ghost.style.top = (ev.clientY + 4) + "px";
    const under = document.elementFromPoint(ev.clientX, ev.clientY);
    const col = under && under.closest("section.column");
    if (col !== drag.target) {
      if (drag.target) drag.target.classList.remove("drop-target");
      drag.target = col;
      if (col) col.classList.add("drop-target");
    }
  });
  const end = (ev, cancelled) => {
    if (!drag || ev.pointerId !== drag.id) return;
    const d = drag;
    drag = null;
    if (!d.moving) return;
    d.card.classList.remove("dragging");
    d.ghost.remove();
    if (d.target) d.target.classList.remove("drop-target");
    // The click that follows a drag must not open the card.
    const swallow = (e) => { e.preventDefault(); e.stopPropagation(); };
    board.addEventListener("click", swallow, {capture: true, once: true});
    setTimeout(() => board.removeEventListener("click", swallow, {capture: true}), 0);
    if (!cancelled && d.target) drop(d.card.dataset.task, d.target.dataset.status);
  };
  board.addEventListener("pointerup", (ev) => end(ev, false));
  board.addEventListener("pointercancel", (ev) => end(ev, true));
}

// projectForms are the operator's: a new project with its first
// repository, and another repository for the current project.
function projectForms(current) {
  const name = h("input", {id: "project-name", required: true, maxlength: 200});
  const path = h("input", {id: "project-repo", required: true, placeholder: "/path/to/a/git/repository"});
  const create = h("form", {class: "card", id: "new-project"}, h("h3", {}, "New project"),
    h("label", {for: "project-name"}, "Name"), name,
    h("label", {for: "project-repo"}, "Git repository (a path on this host)"), path,
    h("div", {class: "row"}, h("button", {type: "submit", class: "primary"}, "Create project")));
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const p = await operatorRead("projects", {name: name.value, repos: [{path: path.value}]});
    if (p) { clearError(); location.hash = "#/project/" + p.project_id; }
  });
  const repoPath = h("input", {id: "repo-path", required: true, placeholder: "/path/to/a/git/repository"});
  const add = current ? h("form", {class: "card", id: "add-repo"}, h("h3", {}, "Add a repository to " + current.name),
    h("label", {for: "repo-path"}, "Git repository (a path on this host)"), repoPath,
    h("div", {class: "row"}, h("button", {type: "submit"}, "Add repository"))) : null;
  if (add) {
    add.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const p = await operatorRead("projects/repos", {project_id: current.project_id, path: repoPath.value});
      if (p) { repoPath.value = ""; clearError(); notice("Repository added to " + current.name); }
    });
  }
  return h("details", {class: "card", id: "project-settings", open: current ? null : true},
    h("summary", {}, "Projects and repositories (operator)"), h("div", {class: "forms"}, create, add));
}

// ownWorkView is the board of an identity that may not list the board (a
// WORKER): its own task and attempt, through agent_get_task, live.
async function ownWorkView() {
  const card = h("div", {class: "card", id: "own-work"});
  page("My work", h("p", {class: "muted"}, "You see the task and attempt assigned to you."), card);
  if (!may("agent_get_task")) {
    card.replaceChildren(h("p", {}, "This identity may call neither list_projects nor agent_get_task; ask the operator to allow one of them for its type in the agents file."));
    return;
  }
  let watching = null;
  const load = serial(async () => {
    const got = await tryCall("agent_get_task");
    if (got.error) {
      fill(card, h("p", {id: "no-work"}, got.error.message), got.error.hint ? h("p", {class: "muted"}, got.error.hint) : null);
      return;
    }
    const t = got.result.task, a = got.result.attempt;
    const attemptID = a ? a.attempt_id : t.latest_attempt_id;
    fill(card, h("h2", {}, t.title), h("dl", {class: "kv"},
      h("dt", {}, "Status"), h("dd", {}, badge(t.status)),
      h("dt", {}, "Task id"), h("dd", {class: "mono"}, t.task_id),
      h("dt", {}, "Description"), h("dd", {}, t.description || "—"),
      h("dt", {}, "Attempt"), h("dd", {}, attemptID ? [h("a", {href: "#/attempt/" + attemptID, id: "own-attempt"}, short(attemptID)), " ",
        a ? badge(a.state) : t.has_in_progress_attempt ? badge("running") : t.last_attempt_failed ? badge("failed") : null] : "no attempt yet")));
    if (attemptID && watching !== attemptID) { watching = attemptID; watch({attempt: attemptID}, () => load()); }
  });
  await load();
}

// ---- task -------------------------------------------------------------------

async function taskView(taskID) {
  const task = await call("get_task", {task_id: taskID});
  if (!task) return page("Task");
  const info = h("div", {class: "card", id: "task-info"});
  const attemptsBox = h("div", {id: "attempts-box"});
  const showInfo = (t) => fill(info, h("dl", {class: "kv"},
    h("dt", {}, "Status"), h("dd", {id: "task-status-now"}, badge(t.status)),
    h("dt", {}, "Task id"), h("dd", {class: "mono"}, t.task_id),
    h("dt", {}, "Updated"), h("dd", {class: "mono"}, t.updated_at),
    h("dt", {}, "Description"), h("dd", {class: "pre"}, t.description || "—")));
  showInfo(task);

  const loadAttempts = serial(async () => {
    const attempts = await call("list_task_attempts", {task_id: taskID});
    const list = attempts ? attempts.attempts : [];
    // list_task_attempts says no state: each attempt's comes from its status.
    const states = await Promise.all(list.map(async (a) => {
      const s = await tryCall("get_attempt_status", {attempt_id: a.attempt_id});
      return s.result ? s.result.state : null;
    }));
    const rows = list.map((a, i) => h("tr", {"data-attempt": a.attempt_id},
      h("td", {}, h("a", {href: "#/attempt/" + a.attempt_id}, short(a.attempt_id))),
      h("td", {}, a.executor), h("td", {class: "state"}, states[i] ? badge(states[i]) : "—"), h("td", {class: "mono"}, a.workspace_branch), h("td", {}, a.created_at)));
    fill(attemptsBox, rows.length ? h("div", {class: "wide"}, h("table", {id: "attempts"},
      h("thead", {}, h("tr", {}, ["Attempt", "Executor", "State", "Branch", "Created"].map((c) => h("th", {scope: "col"}, c)))), h("tbody", {}, rows)))
      : h("p", {class: "muted"}, "No attempt yet."));
  });

  // Everything the page shows is read before it is drawn: content filled
  // in afterwards would move the controls under a pointer about to click.
  const [, start] = await Promise.all([loadAttempts(), may("start_task_attempt") ? startAttemptForm(task) : null]);
  page(task.title, h("div", {class: "row between"}, h("a", {href: "#/project/" + task.project_id}, "← Board"), h("span", {id: "live", class: "live", hidden: true})),
    info, may("update_task") ? editTaskForm(task, showInfo) : null,
    h("h2", {}, "Attempts"), attemptsBox, start,
    may("update_task") || may("delete_task") ? dangerZone(task) : null);
  watch({project: task.project_id}, async () => {
    const t = await tryCall("get_task", {task_id: taskID});
    if (t.error) {
      if (t.error.code === "not_found") info.replaceChildren(h("p", {id: "task-gone"}, "This task was deleted."));
      return;
    }
    showInfo(t.result);
    loadAttempts();
  });
}

// editTaskForm edits title, description and status: update_task with the
// fields that changed.
function editTaskForm(task, shown) {
  const title = h("input", {id: "edit-title", value: task.title, required: true, maxlength: 500});
  const desc = h("textarea", {id: "edit-description"}, task.description || "");
  const status = h("select", {id: "task-status"}, COLUMNS.map((s) => h("option", {value: s, selected: s === task.status}, COLUMN_TITLES[s])));
  let was = task;
  const form = h("form", {class: "card", id: "edit-task"}, h("h2", {}, "Edit"),
    h("label", {for: "edit-title"}, "Title"), title,
    h("label", {for: "edit-description"}, "Description"), desc,
    h("label", {for: "task-status"}, "Status"), status,
    h("div", {class: "row"}, h("button", {type: "submit", class: "primary"}, "Save")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const args = {task_id: task.task_id};
    if (title.value !== was.title) args.title = title.value;
    if (desc.value !== (was.description || "")) args.description = desc.value;
    if (status.value !== was.status) args.status = status.value;
    if (Object.keys(args).length === 1) return notice("Nothing changed.");
    const t = await call("update_task", args);
    if (t) { was = t; clearError(); shown(t); document.querySelector("h1").textContent = t.title; notice("Saved."); }
  });
  return form;
}

// dangerZone cancels or deletes the task, each after a confirmation.
function dangerZone(task) {
  return h("div", {class: "card danger-zone"}, h("h2", {}, "Cancel or delete"),
    h("div", {class: "row"},
      may("update_task") ? h("button", {type: "button", class: "danger", id: "cancel-task", onclick: async () => {
        if (!await confirmDialog("Cancel this task?", `"${task.title}" moves to Cancelled. Its attempts and branches stay.`, "Cancel task")) return;
        const t = await call("update_task", {task_id: task.task_id, status: "cancelled"});
        if (t) { clearError(); notice("Task cancelled."); }
      }}, "Cancel task") : null,
      may("delete_task") ? h("button", {type: "button", class: "danger", id: "delete-task", onclick: async () => {
        if (!await confirmDialog("Delete this task?", `"${task.title}", its attempts, their worktrees and branches are removed; running processes are killed. This cannot be undone.`, "Delete task")) return;
        const d = await call("delete_task", {task_id: task.task_id});
        if (d) { location.hash = "#/project/" + task.project_id; }
      }}, "Delete task") : null));
}

// startAttemptForm starts an attempt: executor (installed ones marked, the
// first installed preselected), its variant, and the repositories.
async function startAttemptForm(task) {
  const [executors, repos] = await Promise.all([call("list_executors"),
    may("list_repos") ? tryCall("list_repos", {project_id: task.project_id}) : Promise.resolve({})]);
  const list = executors ? executors.executors : [];
  const exec = executorSelect(list);
  const variant = h("select", {id: "variant"});
  const showVariants = () => {
    const e = list.find((x) => x.executor === exec.value);
    const vs = e ? e.variants || [] : [];
    fill(variant, vs.length ? vs.map((v) => h("option", {value: v, selected: e.default_variant === v}, v + (e.default_variant === v ? " (default)" : "")))
      : h("option", {value: ""}, "default"));
    variant.disabled = !vs.length;
  };
  exec.addEventListener("change", showVariants);
  showVariants();
  const repoList = repos.result ? repos.result.repos : [];
  const none = !exec.querySelector("option[data-available]");
  const form = h("form", {class: "card", id: "start-attempt"}, h("h2", {}, "Start an attempt"),
    h("div", {class: "row"},
      h("div", {}, h("label", {for: "executor"}, "Executor"), exec),
      h("div", {}, h("label", {for: "variant"}, "Variant"), variant)),
    repoList.length > 1 ? h("fieldset", {id: "repos"}, h("legend", {}, "Repositories"),
      repoList.map((rp) => h("div", {class: "check"}, h("input", {type: "checkbox", name: "repo", id: "repo-" + rp.repo_id, value: rp.repo_id, checked: true}),
        h("label", {for: "repo-" + rp.repo_id}, rp.repo_name + " (" + rp.target_branch + ")")))) : null,
    none ? h("p", {class: "muted", id: "no-executor"}, "No executor's CLI is installed on this host; install one (`plugboard attempt executors` lists them).") : null,
    h("div", {class: "row"}, h("button", {class: "primary", type: "submit"}, "Start")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const args = {task_id: task.task_id, executor: exec.value};
    if (variant.value) args.variant = variant.value;
    const boxes = [...form.querySelectorAll("input[name=repo]")];
    if (boxes.length && boxes.some((b) => !b.checked)) args.repos = boxes.filter((b) => b.checked).map((b) => ({repo_id: b.value}));
    const s = await call("start_task_attempt", args);
    if (s) location.hash = "#/attempt/" + s.attempt_id;
  });
  return form;
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
