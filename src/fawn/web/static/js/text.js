// Text out of LangChain message content (a string, or a list of typed parts).

/** The visible text of a message. */
export function messageText(message) {
  return contentText(message?.content);
}

export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part === "string" ? part : part?.type === "text" ? part.text ?? "" : ""))
    .join("");
}

/** The model's reasoning, when the provider sends it (content parts or additional_kwargs). */
export function reasoningText(message) {
  const parts = Array.isArray(message?.content) ? message.content : [];
  const fromParts = parts
    .filter((p) => p && (p.type === "thinking" || p.type === "reasoning"))
    .map((p) => p.thinking ?? p.reasoning ?? p.text ?? "")
    .join("");
  return fromParts || message?.additional_kwargs?.reasoning_content || "";
}

const UPLOAD_BLOCK = /<uploaded_files>[\s\S]*?<\/uploaded_files>/g;

/** What the user typed, without the uploads block fawn adds to the message. */
export function withoutUploadBlock(text) {
  return text.replace(UPLOAD_BLOCK, "").trim();
}

/** File names listed in the uploads block of a user message. */
export function uploadedNames(text) {
  const names = [];
  for (const block of text.match(UPLOAD_BLOCK) ?? []) {
    for (const line of block.split("\n")) {
      const m = line.match(/^\s*-\s+(.+)\s+\([^()]*\)\s*$/);
      if (m) names.push(m[1]);
    }
  }
  return names;
}
