"""The live development page: one HTML document, its styles and script inline.

Nothing is fetched from elsewhere and nothing is built: the server draws the
pictures (the trace page's graph and timeline), and the script reads the
run's AG-UI events to show the active node and the streaming text at once,
then asks the server for the redrawn pictures.
"""

from __future__ import annotations

from html import escape

from ..tracing._html import _CSS, STEP_SCRIPT, _legend

__all__ = ("page",)

_PAGE_CSS = """
body { padding: 0; }
.top { display: flex; align-items: baseline; gap: 16px; padding: 12px 24px;
  border-bottom: 1px solid #e3e6ea; background: #fafbfc; }
.top h1 { margin: 0; }
.wrap { display: grid; grid-template-columns: 280px minmax(0, 1fr); gap: 20px;
  padding: 0 24px 40px; }
aside h2:first-child, main h2:first-child { margin-top: 16px; }
textarea { width: 100%; min-height: 70px; font: inherit; padding: 6px; border: 1px solid #c9ced6;
  border-radius: 6px; }
button { font: inherit; padding: 4px 12px; border-radius: 6px; border: 1px solid #9aa3b0;
  background: #fff; cursor: pointer; margin: 4px 6px 0 0; }
button.primary { background: #3b6fb6; border-color: #3b6fb6; color: #fff; }
button.danger { border-color: #d64545; color: #b02a2a; }
#runs { list-style: none; padding: 0; margin: 0; max-height: 50vh; overflow-y: auto; }
#runs li { padding: 4px 6px; border-radius: 5px; cursor: pointer; font-size: 13px;
  display: flex; justify-content: space-between; gap: 6px; }
#runs li:hover { background: #eef3fb; } #runs li.current { background: #dde8f7; }
#runs li { flex-direction: column; } #runs .row { display: flex; justify-content: space-between;
  gap: 6px; } #runs .input { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#offline { background: #fff4d6; border-bottom: 1px solid #e6c36a; padding: 6px 24px;
  font-size: 13px; }
#run-question { white-space: pre-wrap; margin: 6px 0; }
#cancel[hidden], #run-question[hidden] { display: none; }
#runs .rid { font-family: ui-monospace, "DejaVu Sans Mono", monospace; overflow: hidden;
  text-overflow: ellipsis; }
.muted { color: #6b7380; font-size: 12px; }
.status-line span { margin-right: 12px; }
#interrupt { border: 2px solid #e69b23; background: #fdf7ea; border-radius: 8px; padding: 8px 12px;
  margin: 10px 0; }
#interrupt[hidden], #answer-box[hidden], #live-text[hidden] { display: none; }
#answer-box { border: 1px solid #2e9d5b; background: #eef9f1; border-radius: 8px;
  padding: 8px 12px; margin: 10px 0; }
#live-text { border: 1px dashed #9aa3b0; border-radius: 8px; padding: 8px 12px; margin: 10px 0;
  white-space: pre-wrap; }
svg g.box.active rect { stroke: #3b6fb6; stroke-width: 4; }
svg g.box.active text { font-weight: 700; }
"""

_SCRIPT = (
    """
(function () {
  var view = { run: null, es: null, seen: 0, active: null, timer: null, texts: {} };
  var $ = function (id) { return document.getElementById(id); };
"""
    + STEP_SCRIPT
    + """
  function call(method, url, body) {
    var options = { method: method, headers: { "content-type": "application/json" } };
    if (body !== undefined) options.body = JSON.stringify(body);
    return fetch(url, options).then(function (r) {
      return r.json().then(function (data) {
        if (!r.ok) throw new Error(data.error || r.statusText);
        return data;
      });
    });
  }
  function say(text) { $("notice").textContent = text || ""; }
  // Run ids share a per-process prefix: show its start and the part that differs.
  function shortId(id) {
    var m = /^([0-9a-f]{16})([0-9a-f]{16})$/.exec(id);
    return m ? m[1].slice(0, 6) + "\u2026" + (m[2].replace(/^0+(?=.)/, "")) : id;
  }
  function clock(seconds) {
    if (typeof seconds !== "number") return "";
    var d = new Date(seconds * 1000);
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }
  function shown(value) {
    if (value === undefined || value === null) return "";
    return typeof value === "string" ? value : JSON.stringify(value);
  }
  function loadRuns() {
    return call("GET", "api/runs").then(function (data) {
      var list = $("runs");
      list.textContent = "";
      data.runs.forEach(function (r) {
        var li = el("li", r.id === view.run ? "current" : "");
        li.setAttribute("data-run", r.id);
        li.setAttribute("title", r.id);
        var top = el("span", "row");
        top.appendChild(el("span", "rid", shortId(r.id)));
        top.appendChild(el("span", "muted", clock(r.started) + " · " + r.status));
        li.appendChild(top);
        li.appendChild(el("span", "input muted", shown(r.input) || "(" + r.source + ")"));
        li.addEventListener("click", function () { openRun(r.id); });
        list.appendChild(li);
      });
    });
  }
  function highlight() {
    var name = view.active ? view.active.split("/").pop() : null;
    document.querySelectorAll("#graph-box g.box").forEach(function (g) {
      g.classList.toggle("active", name !== null && g.getAttribute("data-node") === name);
    });
    document.body.setAttribute("data-active", name || "");
  }
  function renderSteps(steps) {
    var list = $("step-list");
    list.textContent = "";
    steps.forEach(function (s) {
      var d = stepDetails(s);
      d.style.marginLeft = (s.depth * 22) + "px";
      list.appendChild(d);
    });
    document.body.setAttribute("data-steps", String(steps.length));
  }
  function renderQuestion(data) {
    var box = $("interrupt");
    if (data.status !== "interrupted") { box.hidden = true; return; }
    var q = data.question;
    var text = q && q.name ? "The agent wants to call " + q.name + "("
      + JSON.stringify(q.arguments) + ")." : "The run waits for an answer"
      + (q === undefined || q === null ? "." : ": " + JSON.stringify(q));
    $("question").textContent = text;
    box.hidden = false;
  }
  function refresh() {
    if (!view.run) return Promise.resolve();
    var id = view.run;
    return call("GET", "api/runs/" + encodeURIComponent(id)).then(function (data) {
      if (id !== view.run) return;
      $("graph-box").innerHTML = data.graph_svg;
      $("timeline-box").innerHTML = data.timeline_svg;
      renderSteps(data.steps);
      var status = data.status;
      $("run-status").className = "badge " + (status === "ok" ? "ok" : status === "failed"
        ? "failed" : "running");
      $("run-status").textContent = status;
      $("run-id").textContent = "run " + shortId(id);
      $("run-id").setAttribute("title", id);
      $("run-question").textContent = shown(data.input);
      $("run-question").hidden = !shown(data.input);
      $("cancel").hidden = status !== "running";
      $("run-error").textContent = data.error || "";
      var output = data.output !== undefined && data.output !== null ? data.output
        : (status === "ok" ? data.trace_output : null);
      $("answer-box").hidden = output === null || output === undefined;
      if (!$("answer-box").hidden) $("live-text").hidden = true;
      $("answer").textContent = typeof output === "string" ? output : JSON.stringify(output);
      renderQuestion(data);
      if (status !== "running") view.active = null;
      highlight();
      document.body.setAttribute("data-status", status);
      document.body.setAttribute("data-run", id);
    }).catch(function (e) { say(e.message); });
  }
  function soon() {
    if (view.timer) return;
    view.timer = setTimeout(function () { view.timer = null; refresh(); }, 120);
  }
  function onEvent(message) {
    var e = JSON.parse(message.data);
    view.seen += 1;
    document.body.setAttribute("data-events", String(view.seen));
    switch (e.type) {
      case "STEP_STARTED": view.active = e.stepName; highlight(); break;
      case "STEP_FINISHED": if (view.active === e.stepName) view.active = null; highlight(); break;
      case "TEXT_MESSAGE_START":
        view.texts[e.messageId] = ""; $("live-text").hidden = false;
        $("live-text").textContent = ""; break;
      case "TEXT_MESSAGE_CONTENT":
        view.texts[e.messageId] = (view.texts[e.messageId] || "") + e.delta;
        $("live-text").textContent = view.texts[e.messageId]; break;
      case "RUN_FINISHED": case "RUN_ERROR":
        stop(); loadRuns(); break;
    }
    soon();
  }
  function stop() { if (view.es) { view.es.close(); view.es = null; } }
  function follow(id, from) {
    stop();
    view.seen = from;
    var es = new EventSource("api/runs/" + encodeURIComponent(id) + "/events?from=" + from);
    es.onmessage = onEvent;
    es.onerror = function () { if (es.readyState === EventSource.CLOSED) stop(); };
    view.es = es;
  }
  function openRun(id, live) {
    stop();
    view.run = id; view.active = null; view.texts = {};
    $("live-text").hidden = true;
    say("");
    refresh().then(function () {
      var status = document.body.getAttribute("data-status");
      if (live || status === "running") follow(id, 0);
      loadRuns();
    });
  }
  $("start-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var text = $("run-input").value;
    call("POST", "api/runs", { input: text }).then(function (data) {
      openRun(data.id, true);
    }).catch(function (e) { say(e.message); });
  });
  function answer(body) {
    var id = view.run;
    call("POST", "api/runs/" + encodeURIComponent(id) + "/resume", body).then(function (data) {
      $("interrupt").hidden = true;
      follow(id, data.from);
      soon(); loadRuns();
    }).catch(function (e) { say(e.message); });
  }
  $("approve").addEventListener("click", function () { answer({ approve: true }); });
  $("reject").addEventListener("click", function () {
    answer({ approve: false, reason: $("reason").value || "" });
  });
  $("cancel").addEventListener("click", function () {
    if (view.run) call("POST", "api/runs/" + encodeURIComponent(view.run) + "/cancel")
      .catch(function (e) { say(e.message); });
  });
  loadRuns().then(function () { document.body.setAttribute("data-ready", "1"); });
})();
"""
)


# Three nodes and two edges, inline: the page asks the server for no favicon.ico.
_ICON = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
    "%3Cpath d='M4 4L12 8L4 12' stroke='%233f51b5' stroke-width='1.5' fill='none'/%3E"
    "%3Ccircle cx='4' cy='4' r='2.5' fill='%233f51b5'/%3E%3Ccircle cx='12' cy='8' r='2.5' "
    "fill='%233f51b5'/%3E%3Ccircle cx='4' cy='12' r='2.5' fill='%233f51b5'/%3E%3C/svg%3E"
)


def page(title: str, graph_svg: str, *, offline: bool = False) -> str:
    """The page for a graph whose picture (not yet marked by any run) is `graph_svg`.

    `offline` puts up a banner saying the model is the offline scripted one, so
    its canned answers are not taken for a real model's.
    """
    banner = (
        '<div id="offline">The model is the offline scripted one: its answers are canned. '
        "Set a real model (for example <code>--model openai:gpt-4o-mini</code>) to talk to one."
        "</div>"
        if offline
        else ""
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="{_ICON}">'
        f"<title>{escape(title)}</title><style>{_CSS}{_PAGE_CSS}</style></head><body>"
        f'<div class="top"><h1>{escape(title)}</h1><span class="muted" id="notice"></span></div>'
        f"{banner}"
        '<div class="wrap"><aside>'
        '<h2>Start a run</h2><form id="start-form">'
        '<textarea id="run-input" name="input" placeholder="The input: JSON when it parses '
        '(42, [1, 2], &quot;quoted&quot;), plain text otherwise">'
        '</textarea><button class="primary" id="start" type="submit">Run</button></form>'
        '<h2>Runs</h2><ul id="runs"></ul></aside><main>'
        '<p class="status-line"><span class="badge running" id="run-status">no run</span>'
        '<span id="run-id" class="muted"></span>'
        '<button class="danger" id="cancel" type="button" hidden>Cancel run</button></p>'
        '<p id="run-question" hidden></p>'
        '<p class="error" id="run-error"></p>'
        '<div id="interrupt" hidden><strong>Waiting for you</strong><p id="question"></p>'
        '<input id="reason" placeholder="reason (when rejecting)"> '
        '<button class="primary" id="approve" type="button">Approve</button>'
        '<button class="danger" id="reject" type="button">Reject</button></div>'
        '<div id="live-text" hidden></div>'
        '<div id="answer-box" hidden><strong>Answer</strong><p id="answer"></p></div>'
        f'<section id="graph"><h2>Graph</h2><div class="scroll" id="graph-box">{graph_svg}</div>'
        "</section>"
        '<section id="timeline"><h2>Timeline</h2><div class="scroll" id="timeline-box"></div>'
        f"{_legend()}</section>"
        '<section id="steps"><h2>Steps</h2><div id="step-list"></div></section>'
        f"</main></div><script>{_SCRIPT}</script></body></html>\n"
    )
