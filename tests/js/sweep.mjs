// Every thread, run and assistant method of @langchain/langgraph-sdk (JS) against a live fawn.
// Driven by tests/js/test_js_sdk.py: FAWN_URL is the server, FAWN_KEYS the stub's script keys
// ({plain, slow, ask}). Prints one JSON line per method: {"method", "ok", "detail"}; a method
// is ok when it answered what the LangGraph server answers (or, for the assistant writes fawn
// does not have, refused with fawn's error body, as the README says).
import { Client } from "@langchain/langgraph-sdk";

const url = process.env.FAWN_URL;
const keys = JSON.parse(process.env.FAWN_KEYS);
const client = new Client({ apiUrl: url, timeoutMs: 60000, callerOptions: { maxRetries: 0 } });
const ASSISTANT = "lead_agent";
const results = [];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function method(name, body) {
  try {
    const detail = await body();
    results.push({ method: name, ok: true, detail: detail ?? null });
  } catch (error) {
    results.push({ method: name, ok: false, detail: String(error?.stack ?? error) });
  }
}

function say(key, text) {
  return { messages: [{ role: "user", content: `${key} ${text}` }] };
}

async function collect(stream) {
  const events = [];
  for await (const part of stream) events.push(part);
  return events;
}

async function waitStatus(threadId, runId, statuses) {
  for (let i = 0; i < 600; i += 1) {
    const run = await client.runs.get(threadId, runId);
    if (statuses.includes(run.status)) return run;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} never reached ${statuses}`);
}

async function streaming(threadId, runId) {
  for await (const part of client.runs.joinStream(threadId, runId, { streamMode: ["messages-tuple"] })) {
    if (part.event.startsWith("messages")) return;
  }
  throw new Error("the run ended before streaming");
}

// -- assistants ------------------------------------------------------------------------
let assistantId;
await method("assistants.search", async () => {
  const found = await client.assistants.search({ graphId: ASSISTANT });
  check(found.length === 1 && found[0].graph_id === ASSISTANT, JSON.stringify(found));
  assistantId = found[0].assistant_id;
});
await method("assistants.count", async () => {
  check((await client.assistants.count({ graphId: ASSISTANT })) === 1, "count");
});
await method("assistants.get", async () => {
  check((await client.assistants.get(assistantId)).graph_id === ASSISTANT, "get");
});
await method("assistants.getGraph", async () => {
  const graph = await client.assistants.getGraph(assistantId);
  check(Array.isArray(graph.nodes) && graph.nodes.length > 0, "nodes");
});
await method("assistants.getSchemas", async () => {
  const schemas = await client.assistants.getSchemas(assistantId);
  check(schemas.graph_id === ASSISTANT && schemas.input_schema, "schemas");
});
await method("assistants.getSubgraphs", async () => {
  check(typeof (await client.assistants.getSubgraphs(assistantId)) === "object", "subgraphs");
});
await method("assistants.getVersions", async () => {
  const versions = await client.assistants.getVersions(assistantId);
  check(versions.length === 1 && versions[0].version === 1, JSON.stringify(versions));
});
for (const [name, call] of [
  ["assistants.create", () => client.assistants.create({ graphId: ASSISTANT, name: "mine" })],
  ["assistants.update", () => client.assistants.update(assistantId, { name: "renamed" })],
  ["assistants.delete", () => client.assistants.delete(assistantId)],
  ["assistants.setLatest", () => client.assistants.setLatest(assistantId, 1)],
]) {
  await method(name, async () => {
    try {
      await call();
    } catch (error) {
      check(error.status === 405 || error.status === 404 || error.status === 422, `status ${error.status}`);
      return `refused: ${error.status}`;
    }
    throw new Error("fawn has one built-in assistant: a write must be refused");
  });
}

// -- threads -------------------------------------------------------------------------
let threadId;
await method("threads.create", async () => {
  const thread = await client.threads.create({ graphId: ASSISTANT, metadata: { sweep: keys.plain } });
  threadId = thread.thread_id;
  check(thread.metadata.sweep === keys.plain && thread.status === "idle", JSON.stringify(thread));
});
await method("threads.create(supersteps)", async () => {
  const thread = await client.threads.create({
    graphId: ASSISTANT,
    supersteps: [{ updates: [{ values: say(keys.plain, "seed"), asNode: "__input__" }] }],
  });
  const state = await client.threads.getState(thread.thread_id);
  check(state.next.join() === "__start__", JSON.stringify(state.next));
});
await method("threads.get", async () => {
  check((await client.threads.get(threadId)).thread_id === threadId, "get");
});
await method("threads.update", async () => {
  const thread = await client.threads.update(threadId, { metadata: { more: 1 } });
  check(thread.metadata.more === 1 && thread.metadata.sweep === keys.plain, "update");
});
await method("threads.search", async () => {
  const found = await client.threads.search({ metadata: { sweep: keys.plain } });
  check(found.some((t) => t.thread_id === threadId), "search");
});
await method("threads.count", async () => {
  check((await client.threads.count({ metadata: { sweep: keys.plain } })) >= 1, "count");
});

// -- runs ----------------------------------------------------------------------------
let runId;
await method("runs.wait", async () => {
  const values = await client.runs.wait(threadId, ASSISTANT, { input: say(keys.plain, "hi") });
  check(values.messages.at(-1).type === "ai", JSON.stringify(values));
});
await method("runs.stream", async () => {
  const events = await collect(
    client.runs.stream(threadId, ASSISTANT, {
      input: say(keys.plain, "again"),
      streamMode: ["values", "messages-tuple", "updates"],
    }),
  );
  check(events[0].event === "metadata", events[0].event);
  runId = events[0].data.run_id;
  check(events.some((e) => e.event === "messages"), "messages");
});
await method("runs.stream(events)", async () => {
  const events = await collect(
    client.runs.stream(threadId, ASSISTANT, { input: say(keys.plain, "events"), streamMode: ["events"] }),
  );
  check(events.some((e) => e.event === "events" && e.data.event === "on_chat_model_start"), "events");
});
await method("runs.create", async () => {
  const run = await client.runs.create(threadId, ASSISTANT, { input: say(keys.plain, "bg") });
  await client.runs.join(threadId, run.run_id);
});
await method("runs.get", async () => {
  check((await client.runs.get(threadId, runId)).status === "success", "get");
});
await method("runs.list", async () => {
  check((await client.runs.list(threadId)).length >= 3, "list");
});
await method("runs.join", async () => {
  const values = await client.runs.join(threadId, runId);
  check(Array.isArray(values.messages), "join");
});
await method("runs.joinStream", async () => {
  const events = await collect(client.runs.joinStream(threadId, runId));
  check(events.at(-1).event === "end" || events.length > 0, "joinStream");
});
await method("runs.joinStream(lastEventId -1)", async () => {
  const events = await collect(client.runs.joinStream(threadId, runId, { lastEventId: "-1" }));
  check(events[0].event === "metadata", JSON.stringify(events[0]));
});
await method("runs.createBatch", async () => {
  const runs = await client.runs.createBatch([
    { assistantId: ASSISTANT, threadId: undefined, input: say(keys.plain, "batch") },
  ]);
  check(runs.length === 1 && runs[0].run_id, JSON.stringify(runs));
});
await method("runs.stream(stateless)", async () => {
  const events = await collect(client.runs.stream(null, ASSISTANT, { input: say(keys.plain, "nothread") }));
  check(events.at(-1).event !== "error", JSON.stringify(events.at(-1)));
});
await method("runs.wait(stateless)", async () => {
  const values = await client.runs.wait(null, ASSISTANT, { input: say(keys.plain, "nothread") });
  check(values.messages.length >= 2, "stateless wait");
});
// the cancels, on a thread of their own whose model streams slowly (the stub's script is
// chosen by the thread's first message)
let slowThread;
async function slowRun(text) {
  if (slowThread === undefined) slowThread = (await client.threads.create()).thread_id;
  const run = await client.runs.create(slowThread, ASSISTANT, {
    input: say(keys.slow, text),
    streamMode: ["messages-tuple"],
  });
  await streaming(slowThread, run.run_id);
  return run.run_id;
}
await method("runs.cancel(wait, interrupt)", async () => {
  const run = await slowRun("one");
  const values = await client.runs.cancel(slowThread, run, true, "interrupt");
  check(values.messages[0].content.endsWith("one"), JSON.stringify(values));
  check((await client.runs.get(slowThread, run)).status === "interrupted", "status");
});
await method("runs.cancel(wait, rollback)", async () => {
  const before = await client.threads.getState(slowThread);
  const run = await slowRun("two");
  const values = await client.runs.cancel(slowThread, run, true, "rollback");
  const after = await client.threads.getState(slowThread);
  check(JSON.stringify(after.values) === JSON.stringify(before.values), "rolled back");
  check(JSON.stringify(values) === JSON.stringify(before.values), JSON.stringify(values));
});
await method("runs.cancel", async () => {
  const run = await slowRun("three");
  await client.runs.cancel(slowThread, run);
  await waitStatus(slowThread, run, ["interrupted"]);
});
await method("runs.cancelMany", async () => {
  const run = await slowRun("four");
  await client.runs.cancelMany({ threadId: slowThread, status: "all" });
  await waitStatus(slowThread, run, ["interrupted"]);
});
await method("runs.delete", async () => {
  const run = await client.runs.create(threadId, ASSISTANT, { input: say(keys.plain, "gone") });
  await client.runs.join(threadId, run.run_id);
  await client.runs.delete(threadId, run.run_id);
  try {
    await client.runs.get(threadId, run.run_id);
  } catch (error) {
    check(error.status === 404, `status ${error.status}`);
    return;
  }
  throw new Error("deleted run still there");
});

// -- state and history ---------------------------------------------------------------
await method("threads.getState", async () => {
  const state = await client.threads.getState(threadId);
  check(state.values.messages.length >= 2 && state.checkpoint.checkpoint_id, "state");
});
await method("threads.getState(checkpoint)", async () => {
  const latest = await client.threads.getState(threadId);
  const byId = await client.threads.getState(threadId, latest.checkpoint.checkpoint_id);
  const byCheckpoint = await client.threads.getState(threadId, latest.checkpoint);
  check(byId.checkpoint.checkpoint_id === byCheckpoint.checkpoint.checkpoint_id, "checkpoint");
});
await method("threads.getHistory", async () => {
  const history = await client.threads.getHistory(threadId, { limit: 5 });
  check(history.length === 5, `history ${history.length}`);
});
await method("threads.getHistory(before Config)", async () => {
  const history = await client.threads.getHistory(threadId, { limit: 3 });
  const older = await client.threads.getHistory(threadId, {
    limit: 2,
    before: { configurable: { checkpoint_id: history[0].checkpoint.checkpoint_id } },
  });
  check(older[0].checkpoint.checkpoint_id === history[1].checkpoint.checkpoint_id, "before");
});
await method("threads.updateState", async () => {
  const config = await client.threads.updateState(threadId, { values: { title: "swept" } });
  check(config.checkpoint.checkpoint_id, JSON.stringify(config));
  check((await client.threads.getState(threadId)).values.title === "swept", "title");
});
await method("threads.patchState", async () => {
  await client.threads.patchState(threadId, { swept: true });
  check((await client.threads.getState(threadId)).metadata.swept === true, "patched");
});
await method("threads.joinStream", async () => {
  const controller = new AbortController();
  const stream = client.threads.joinStream(threadId, { signal: controller.signal, lastEventId: "-1" });
  const run = await client.runs.create(threadId, ASSISTANT, { input: say(keys.plain, "joined") });
  const seen = [];
  for await (const part of stream) {
    seen.push(part.event);
    if (part.event === "run_done") break;
  }
  controller.abort();
  check(seen[0] === "metadata" && seen.at(-1) === "run_done", seen.join());
  await client.runs.join(threadId, run.run_id);
});

// -- the thread-stream protocol (client.threads.stream) ------------------------------
await method("threads.stream", async () => {
  const thread = client.threads.stream({ assistantId: ASSISTANT });
  await thread.run.start({ input: say(keys.plain, "protocol") });
  const output = await thread.output;
  check(output.messages.at(-1).content === "stub reply", JSON.stringify(output.messages.at(-1)));
  await thread.close();
});
await method("threads.stream(interrupt, respond)", async () => {
  const thread = client.threads.stream({ assistantId: ASSISTANT });
  await thread.run.start({ input: say(keys.ask, "colour") });
  await thread.output;
  const interrupts = thread.interrupts;
  check(interrupts.length === 1, JSON.stringify(interrupts));
  check(interrupts[0].payload.question === "Which colour?", JSON.stringify(interrupts));
  await thread.input.respond({ namespace: [], interrupt_id: interrupts[0].interruptId, response: "Blue" });
  // a ThreadStream's output is its first run's: the resumed run's answer is in the state
  const runs = await client.runs.list(thread.threadId);
  await waitStatus(thread.threadId, runs[0].run_id, ["success"]);
  const state = await client.threads.getState(thread.threadId);
  check(state.values.messages.at(-1).content === "Blue it is", JSON.stringify(state.values));
  await thread.close();
});

// -- copy, prune and delete last -----------------------------------------------------
await method("threads.copy", async () => {
  const copy = await client.threads.copy(threadId);
  check(copy.thread_id !== threadId, "copy");
  await client.threads.delete(copy.thread_id);
});
await method("threads.prune", async () => {
  const spare = await client.threads.create();
  const pruned = await client.threads.prune([spare.thread_id]);
  check(pruned.pruned_count === 1, JSON.stringify(pruned));
});
await method("threads.delete", async () => {
  await client.threads.delete(threadId);
  try {
    await client.threads.get(threadId);
  } catch (error) {
    check(error.status === 404, `status ${error.status}`);
    return;
  }
  throw new Error("deleted thread still there");
});

for (const result of results) console.log(JSON.stringify(result));
process.exit(0); // thread streams may keep idle connections open
