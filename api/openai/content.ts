// Content with images, OpenAI side: a user message's content parts (Chat Completions text and
// image_url parts; Responses input_text and input_image) -> the internal ordered parts
// (engines/chat/images.ts); tool results' parts too (a tool message's content, a Responses
// function_call_output's output). Other roles stay text-only (chat-request.ts textContent).
import type { ChatMessage, ContentPart, ImageDetail, Role } from "../../engines/chat/types";
import { imageFromUrl, messageOfParts } from "../../engines/chat/images";
import { bad, isObj } from "./validate";

function detailOf(v: unknown, param: string): { detail?: ImageDetail } {
  if (v === undefined || v === null) return {};
  if (v !== "low" && v !== "high" && v !== "auto") throw bad(`'${param}' must be "low", "high" or "auto"`, param);
  return { detail: v };
}

export function partsContent(v: unknown, param: string): ContentPart[] {
  if (typeof v === "string") return [{ type: "text", text: v }];
  if (!Array.isArray(v)) throw bad(`'${param}' must be a string or an array of content parts`, param);
  return v.map((p, i): ContentPart => {
    const q = `${param}[${i}]`;
    if (!isObj(p)) throw bad(`'${q}' must be a content part object`, q);
    switch (p.type) {
      case "text":
      case "input_text":
      case "output_text":
        if (typeof p.text !== "string") throw bad(`'${q}.text' must be a string`, `${q}.text`);
        return { type: "text", text: p.text };
      case "refusal":
        if (typeof p.refusal !== "string") throw bad(`'${q}.refusal' must be a string`, `${q}.refusal`);
        return { type: "text", text: p.refusal };
      case "image_url": {
        // {image_url: {url, detail?}} (a bare string is accepted too)
        const iu = p.image_url;
        const url = isObj(iu) ? iu.url : iu;
        return { type: "image", image: imageFromUrl(url, isObj(iu) ? `${q}.image_url.url` : `${q}.image_url`), ...detailOf(isObj(iu) ? iu.detail : undefined, `${q}.image_url.detail`) };
      }
      case "input_image":
        if (p.file_id !== undefined && p.image_url === undefined) throw bad(`'${q}.file_id': uploaded files are not kept here; send image_url (an http(s) or data: URL)`, `${q}.file_id`);
        return { type: "image", image: imageFromUrl(p.image_url, `${q}.image_url`), ...detailOf(p.detail, `${q}.detail`) };
      default:
        throw bad(`content part type '${String(p.type)}' is not supported; text and image parts are`, `${q}.type`);
    }
  });
}

/** A user or tool message (or Responses input item) whose content may hold images. */
export function messageWithImages(role: Role, v: unknown, param: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  if (typeof v === "string") return { role, content: v, ...extra }; // the common case: plain text, no parts
  return messageOfParts(role, partsContent(v, param), extra);
}
