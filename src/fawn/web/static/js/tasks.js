// Sub-agent progress from `custom` stream events, in DeerFlow's shapes: task_started,
// task_running (one per sub-agent message), then one of task_completed, task_failed,
// task_cancelled, task_timed_out; each carries the `task_id` (the id of the lead agent's
// `task` tool call).

import { messageText } from "./text.js";

const TERMINAL = {
  task_completed: "completed",
  task_failed: "failed",
  task_cancelled: "cancelled",
  task_timed_out: "timed out",
};

/** Fold one custom event into `tasks` (a Map); true if it was a task event. */
export function applyTaskEvent(tasks, event) {
  if (!event || typeof event !== "object" || typeof event.type !== "string") return false;
  if (!event.type.startsWith("task_") || typeof event.task_id !== "string") return false;
  const task = tasks.get(event.task_id) ?? {
    id: event.task_id, status: "running", description: "", modelName: "", steps: [],
    result: null, error: null, totalTokens: 0,
  };
  if (typeof event.description === "string" && event.description) task.description = event.description;
  if (typeof event.model_name === "string" && event.model_name) task.modelName = event.model_name;
  const total = Number(event.usage?.total_tokens);
  if (Number.isFinite(total)) task.totalTokens = Math.max(task.totalTokens, total);
  if (event.type === "task_running" && event.message) addStep(task, event);
  if (event.type in TERMINAL) {
    task.status = TERMINAL[event.type];
    if (typeof event.result === "string") task.result = event.result;
    if (event.error) task.error = String(event.error);
  } else if (event.type !== "task_started" && event.type !== "task_running") {
    return false;
  }
  tasks.set(task.id, task);
  return true;
}

function addStep(task, event) {
  const index = Number.isInteger(event.message_index) ? event.message_index : task.steps.length + 1;
  if (task.steps.some((s) => s.index === index)) return;
  const calls = (event.message.tool_calls ?? []).map((c) => c?.name).filter(Boolean);
  const text = messageText(event.message).trim();
  task.steps.push({ index, text, calls });
  task.steps.sort((a, b) => a.index - b.index);
}

/** Render every task into `container`; `callArgs` maps tool-call ids to their arguments. */
export function renderTasks(container, tasks, callArgs = new Map()) {
  container.replaceChildren(...[...tasks.values()].map((t) => taskCard(t, callArgs.get(t.id))));
}

function taskCard(task, args) {
  const card = document.createElement("details");
  card.className = "task";
  card.dataset.taskId = task.id;
  card.dataset.status = task.status;
  card.open = task.status === "running";
  const summary = document.createElement("summary");
  const what = task.description || args?.description || "Sub-agent task";
  const kind = args?.subagent_type ? ` (${args.subagent_type})` : "";
  const model = task.modelName ? ` · ${task.modelName}` : "";
  const tokens = task.totalTokens ? ` · ${task.totalTokens} tokens` : "";
  summary.textContent = `${what}${kind}: ${task.status}${model}${tokens}`;
  card.append(summary);
  if (task.steps.length) {
    const steps = document.createElement("ol");
    steps.className = "task-steps";
    for (const step of task.steps) {
      const li = document.createElement("li");
      const calls = step.calls.length ? `[${step.calls.join(", ")}] ` : "";
      li.textContent = `${calls}${step.text}`.trim() || "(working)";
      steps.append(li);
    }
    card.append(steps);
  }
  if (task.result) card.append(paragraph(task.result, "task-result"));
  if (task.error) card.append(paragraph(task.error, "task-error error"));
  return card;
}

function paragraph(text, className) {
  const p = document.createElement("p");
  p.className = className;
  p.textContent = text;
  return p;
}
