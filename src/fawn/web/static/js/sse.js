// Server-sent events read from a fetch() body (EventSource cannot POST nor set headers).

/** Yield {event, data, id} for each event of `response`'s body; comments are skipped. */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame = { event: "message", data: [], id: null };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (frame.data.length) yield finish(frame);
          frame = { event: "message", data: [], id: null };
        } else {
          field(frame, line);
        }
      }
    }
    if (frame.data.length) yield finish(frame);
  } finally {
    reader.releaseLock();
  }
}

function field(frame, line) {
  if (line.startsWith(":")) return;
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  if (name === "event") frame.event = value;
  else if (name === "data") frame.data.push(value);
  else if (name === "id") frame.id = value;
}

function finish(frame) {
  const text = frame.data.join("\n");
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    data = text;
  }
  return { event: frame.event, data, id: frame.id };
}
