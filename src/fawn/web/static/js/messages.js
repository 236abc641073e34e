// The conversation as DOM: user messages, answers (Markdown), reasoning and tool calls
// (collapsible, each with its result). Nodes are reused while a message is unchanged, so a
// streamed token re-renders one message, and an open <details> stays open.

import { renderMarkdown } from "./markdown.js";
import { contentText, messageText, reasoningText, uploadedNames, withoutUploadBlock } from "./text.js";

const cache = new Map(); // message key -> { signature, node }

/** Render `messages` (state messages, then live ones) into `container`. */
export function renderMessages(container, messages, { streamingIds = new Set() } = {}) {
  const results = toolResults(messages);
  const callIds = new Set(messages.flatMap((m) => (m?.tool_calls ?? []).map((c) => c.id)));
  const nodes = [];
  const seen = new Set();
  for (const [index, message] of messages.entries()) {
    if (!visible(message, callIds)) continue;
    const key = message.id ?? `i${index}`;
    const streaming = streamingIds.has(message.id);
    const signature = JSON.stringify([message, callResults(message, results), streaming]);
    let entry = cache.get(key);
    if (!entry || entry.signature !== signature) {
      const node = messageNode(message, results, streaming);
      if (entry) keepOpen(entry.node, node);
      entry = { signature, node };
      cache.set(key, entry);
    }
    seen.add(key);
    nodes.push(entry.node);
  }
  for (const key of cache.keys()) if (!seen.has(key)) cache.delete(key);
  container.replaceChildren(...nodes);
}

function toolResults(messages) {
  const results = new Map();
  for (const m of messages) if (m?.type === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  return results;
}

function callResults(message, results) {
  return (message.tool_calls ?? []).map((c) => results.get(c.id) ?? null);
}

function visible(message, callIds) {
  if (!message || typeof message !== "object") return false;
  if (message.type === "tool") return !callIds.has(message.tool_call_id);
  if (message.type === "human") return true;
  if (message.type === "ai" || message.type === "AIMessageChunk") {
    return Boolean(messageText(message).trim() || reasoningText(message) || message.tool_calls?.length || message.additional_kwargs?.fawn_error);
  }
  return false;
}

function messageNode(message, results, streaming) {
  if (message.type === "human") return humanNode(message);
  if (message.type === "tool") return orphanToolNode(message);
  return aiNode(message, results, streaming);
}

function humanNode(message) {
  const text = contentText(message.content);
  const node = div("msg human");
  node.dataset.role = "user";
  node.append(withoutUploadBlock(text));
  const names = uploadedNames(text);
  if (names.length) {
    const files = div("files");
    files.textContent = `Attached: ${names.join(", ")}`;
    node.append(files);
  }
  return node;
}

function aiNode(message, results, streaming) {
  const error = message.additional_kwargs?.fawn_error;
  const node = div(`msg ai${streaming ? " streaming" : ""}${error ? " error" : ""}`);
  node.dataset.role = "assistant";
  if (message.id) node.dataset.messageId = message.id;
  const reasoning = reasoningText(message);
  if (reasoning) {
    const details = document.createElement("details");
    details.className = "thinking";
    const summary = document.createElement("summary");
    summary.textContent = "Thinking";
    const body = document.createElement("div");
    body.append(renderMarkdown(reasoning));
    details.append(summary, body);
    node.append(details);
  }
  const body = div("body");
  const text = messageText(message);
  body.append(renderMarkdown(text || (error ? error.message ?? "The model failed." : "")));
  if (text || error || streaming) node.append(body);
  for (const call of message.tool_calls ?? []) node.append(toolNode(call, results.get(call.id)));
  return node;
}

function toolNode(call, result) {
  const details = document.createElement("details");
  details.className = "tool";
  details.dataset.toolCallId = call.id ?? "";
  details.dataset.tool = call.name ?? "";
  const status = result ? result.status ?? "success" : "pending";
  const summary = document.createElement("summary");
  const name = document.createElement("strong");
  name.textContent = call.name || "tool";
  const state = document.createElement("span");
  state.className = `tool-status ${status}`;
  state.textContent = result ? (status === "error" ? " failed" : " done") : " running…";
  summary.append(name, document.createTextNode(` ${describe(call)}`), state);
  details.append(summary, labelled("Arguments", pretty(call.args)));
  if (result) details.append(labelled("Result", contentText(result.content)));
  return details;
}

function orphanToolNode(message) {
  const node = div("msg ai");
  node.append(toolNode({ id: message.tool_call_id, name: message.name, args: {} }, message));
  return node;
}

function describe(call) {
  const args = typeof call.args === "object" && call.args ? call.args : {};
  const hint = args.description ?? args.path ?? args.command ?? args.question ?? args.pattern;
  if (typeof hint !== "string") return "";
  return hint.length > 80 ? `${hint.slice(0, 77)}…` : hint;
}

function pretty(args) {
  if (typeof args === "string") return args;
  try {
    return JSON.stringify(args ?? {}, null, 2);
  } catch {
    return String(args);
  }
}

function labelled(label, text) {
  const wrap = document.createElement("div");
  const head = document.createElement("div");
  head.className = "muted";
  head.textContent = label;
  const pre = document.createElement("pre");
  pre.textContent = text;
  wrap.append(head, pre);
  return wrap;
}

function keepOpen(oldNode, newNode) {
  const open = new Set(
    [...oldNode.querySelectorAll("details[open]")].map((d) => d.dataset.toolCallId ?? d.className),
  );
  for (const d of newNode.querySelectorAll("details")) {
    if (open.has(d.dataset.toolCallId ?? d.className)) d.open = true;
  }
}

function div(className) {
  const node = document.createElement("div");
  node.className = className;
  return node;
}
