// Drives an agentgraph AG-UI endpoint with the official TypeScript client (@ag-ui/client).
//
//   node agui_client.mjs <endpoint URL> <scenario>
//
// Prints one JSON object: what the client saw in each run of the scenario. The
// client itself checks every stream (event order, a start and an end per run)
// and rejects one that breaks the protocol; such a rejection is reported too.
import { HttpAgent } from "@ag-ui/client";

const [url, scenario] = process.argv.slice(2);

async function run(agent, parameters, { abortAtStep } = {}) {
  const seen = {
    events: [], outcome: null, result: null, error: null, interrupts: [], custom: [],
  };
  const subscriber = {
    onEvent({ event }) {
      seen.events.push(event.type);
      if (abortAtStep && event.type === "STEP_STARTED" && event.stepName === abortAtStep) {
        agent.abortRun();
      }
    },
    onRunFinishedEvent(finished) {
      seen.outcome = finished.outcome;
      seen.result = finished.result ?? null;
      seen.interrupts = finished.interrupts ?? [];
    },
    onCustomEvent({ event }) {
      seen.custom.push({ name: event.name, value: event.value });
    },
    onRunErrorEvent({ event }) {
      seen.error = { code: event.code ?? null, message: event.message };
    },
  };
  try {
    await agent.runAgent(parameters, subscriber);
  } catch (error) {
    seen.rejected = String(error?.message ?? error);
  }
  return seen;
}

async function status(runId) {
  const response = await fetch(new URL(`api/runs/${runId}`, url.replace(/agui$/, "")));
  return (await response.json()).status;
}

async function until(runId, wanted) {
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if ((await status(runId)) === wanted) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

const scenarios = {
  // A tool call that waits for approval, approved by the next run.
  async approval() {
    const agent = new HttpAgent({ url, threadId: "thread-approval" });
    agent.messages = [{ id: "u1", role: "user", content: "Book me a table in Paris." }];
    const first = await run(agent, { runId: "approval-1" });
    const [interrupt] = first.interrupts;
    const second = await run(agent, {
      runId: "approval-2",
      resume: [{ interruptId: interrupt.id, status: "resolved", payload: true }],
    });
    return { first, second, interrupt };
  },
  // A client that leaves mid-run; an answer nobody asked for; then a resume with no payload.
  async disconnect() {
    const agent = new HttpAgent({ url, threadId: "thread-left" });
    agent.messages = [{ id: "u1", role: "user", content: "go" }];
    const left = await run(agent, { runId: "left-1" }, { abortAtStep: "wait" });
    const cancelled = await until("left-1", "cancelled");
    const unasked = await run(new HttpAgent({ url, threadId: "thread-left" }), {
      runId: "left-2",
      resume: [{ interruptId: "left-1", status: "resolved", payload: "an answer" }],
    });
    const resumed = await run(new HttpAgent({ url, threadId: "thread-left" }), {
      runId: "left-3",
      resume: [{ interruptId: "left-1", status: "resolved" }],
    });
    return { left, cancelled, unasked, resumed, finally: await status("left-1") };
  },
  // One thread across two requests: the client sends its whole history each time.
  async thread() {
    const agent = new HttpAgent({ url, threadId: "thread-kept" });
    agent.messages = [{ id: "u1", role: "user", content: "My name is Ann." }];
    const first = await run(agent, { runId: "kept-1" });
    agent.messages.push({ id: "u2", role: "user", content: "What is my name?" });
    const second = await run(agent, { runId: "kept-2" });
    return { first, second, history: agent.messages.map((m) => [m.role, m.content ?? null]) };
  },
  // A team: the conversation handed from one agent to another, seen as a CUSTOM event.
  async handoff() {
    const agent = new HttpAgent({ url, threadId: "thread-team" });
    agent.messages = [{ id: "u1", role: "user", content: "Please refund order 7." }];
    return { run: await run(agent, { runId: "team-1" }) };
  },
};

const outcome = await scenarios[scenario]();
process.stdout.write(JSON.stringify(outcome));
