// Streams a run of an agentgraph agent server into the state manager `useStream`
// is built on (`StreamManager` and `MessageTupleManager` from
// @langchain/langgraph-sdk/ui), as the React hook does, and prints what it held.
//
//   node langgraph_stream_manager.mjs <server URL> <graph id>
//
// Prints one JSON object: the messages after every change while the run
// streamed, the custom data the hook was given, and the thread's state after.
import { Client } from "@langchain/langgraph-sdk";
import { MessageTupleManager, StreamManager } from "@langchain/langgraph-sdk/ui";

const [url, graph] = process.argv.slice(2);
const client = new Client({ apiUrl: url });
const thread = await client.threads.create();

const manager = new StreamManager(new MessageTupleManager(), { throttle: false });
const seen = [];
manager.subscribe(() => {
  const values = manager.values;
  if (values?.messages) seen.push(values.messages.map((m) => [m.type, m.id, m.content]));
});
const custom = [];
let error = null;
await manager.start(
  async (signal) =>
    client.runs.stream(thread.thread_id, graph, {
      input: { messages: [{ type: "human", content: "weather?" }] },
      streamMode: ["values", "messages-tuple", "custom"],
      signal,
    }),
  {
    getMessages: (values) => values.messages ?? [],
    setMessages: (values, messages) => ({ ...values, messages }),
    initialValues: {},
    callbacks: { onCustomEvent: (data) => custom.push(data) },
    onError: (e) => {
      error = String(e);
    },
  },
);
const state = await client.threads.getState(thread.thread_id);
console.log(JSON.stringify({
  seen,
  custom,
  error,
  final: state.values.messages.map((m) => [m.type, m.id, m.content]),
}));
