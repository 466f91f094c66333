// Images in the internal chat shape (types.ts ChatMessage.parts): what the protocol adapters in
// api/ build from a client's image parts, and what providers read back. An image is its bytes
// (base64 and a media type) or an http(s) URL; svc never fetches a URL itself, so a URL reaches
// only vendors that fetch URLs (OpenAI, Azure OpenAI, Anthropic, Gemini/Vertex as file_data).
// A provider that cannot take an image refuses the request (400 naming the model); nothing is
// dropped silently. Tool results may hold images too (a tool message with parts): each provider
// puts them where its vendor takes them (docs/providers.md "Images in tool results").
// Size is bounded by the server's body limit (Server spec.limits.maxBodyBytes).
import { SvcError } from "../errors";
import type { ChatMessage, ChatRequest, ContentPart, ImageSource, Role } from "./types";

/** Media types every vendor here takes (Bedrock's png | jpeg | gif | webp). */
export const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,/i;

const bad = (message: string, param: string) => new SvcError("invalid", "invalid_request", message, param);

function checkType(mediaType: string, param: string): string {
  const t = mediaType.toLowerCase();
  if (!IMAGE_MEDIA_TYPES.has(t)) throw bad(`image media type '${mediaType}' is not supported; use image/png, image/jpeg, image/gif or image/webp`, param);
  return t;
}

function checkBase64(data: string, param: string): string {
  if (data.length === 0 || data.length % 4 === 1 || !BASE64.test(data)) throw bad(`'${param}' must be base64-encoded image bytes`, param);
  return data;
}

/** The media type of image bytes by their magic numbers (Ollama sends bare base64). */
export function sniffImageType(b64: string): string | undefined {
  const b = Buffer.from(b64.slice(0, 24), "base64");
  if (b.length >= 8 && b[0] === 0x89 && b.toString("latin1", 1, 4) === "PNG") return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 6 && b.toString("latin1", 0, 4) === "GIF8") return "image/gif";
  if (b.length >= 12 && b.toString("latin1", 0, 4) === "RIFF" && b.toString("latin1", 8, 12) === "WEBP") return "image/webp";
  return undefined;
}

/** Base64 bytes as sent (Anthropic's source, Ollama's images): the media type given, else sniffed. */
export function imageFromBase64(data: unknown, mediaType: unknown, param: string): ImageSource {
  if (typeof data !== "string") throw bad(`'${param}' must be base64-encoded image bytes`, param);
  checkBase64(data, param);
  const t = typeof mediaType === "string" && mediaType ? mediaType : sniffImageType(data);
  if (!t) throw bad(`'${param}': the image is not PNG, JPEG, GIF or WebP`, param);
  return { type: "base64", mediaType: checkType(t, param), data };
}

/** An OpenAI image_url (or Responses input_image): a data: URL with base64 bytes, or http(s). */
export function imageFromUrl(url: unknown, param: string): ImageSource {
  if (typeof url !== "string" || !url) throw bad(`'${param}' must be an http(s) URL or a data:image/…;base64 URL`, param);
  const m = DATA_URL.exec(url);
  if (m) return { type: "base64", mediaType: checkType(m[1], param), data: checkBase64(url.slice(m[0].length), param) };
  if (/^data:/i.test(url)) throw bad(`'${param}': a data URL must be base64 (data:image/png;base64,…)`, param);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad(`'${param}' must be an http(s) URL or a data:image/…;base64 URL`, param);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw bad(`'${param}' must be an http(s) URL or a data:image/…;base64 URL`, param);
  return { type: "url", url };
}

/** A message from ordered parts: `parts` is kept only when an image is among them. */
export function messageOfParts(role: Role, parts: ContentPart[], extra: Partial<ChatMessage> = {}): ChatMessage {
  const content = parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
  return parts.some((p) => p.type === "image") ? { role, content, parts, ...extra } : { role, content, ...extra };
}

/** The parts of a message (a text-only message: one text part, none when empty). */
export function partsOf(m: ChatMessage): ContentPart[] {
  return m.parts ?? (m.content ? [{ type: "text", text: m.content }] : []);
}

export function hasImages(req: ChatRequest): boolean {
  for (const m of req.messages) if (m.parts?.some((p) => p.type === "image")) return true;
  return false;
}

/** The 400 for a model that cannot take images. */
export function imagesRefused(model: string, why: string): SvcError {
  return bad(`model ${JSON.stringify(model)} does not accept images (${why}); send text only or choose a vision model`, "messages");
}

/** Refuse image URLs for a vendor that takes only bytes (svc does not fetch URLs). */
export function refuseImageUrls(req: ChatRequest, model: string, vendor: string): void {
  for (const m of req.messages) {
    if (m.parts?.some((p) => p.type === "image" && p.image.type === "url")) {
      throw bad(`model ${JSON.stringify(model)} (${vendor}) takes images as bytes only, not URLs; send the image as base64 (a data:image/…;base64 URL)`, "messages");
    }
  }
}

/** A tool result's images (a tool message with parts), none for a text-only one. */
export function toolImages(m: ChatMessage): ContentPart[] {
  return m.role === "tool" && m.parts ? m.parts.filter((p) => p.type === "image") : [];
}

/** The text part that names the tool call whose images follow it, where a vendor needs the
 * images outside the tool result (OpenAI chat, Gemini). */
export const toolImagesLabel = (m: ChatMessage): ContentPart => ({ type: "text", text: `Images returned by tool call ${m.toolCallId ?? m.name ?? "?"}:` });

/** For vendors whose tool messages hold text only: each tool message keeps its text, and the
 * images of a run of consecutive tool messages follow it in one user message (a user message
 * between two tool messages would break the run that answers one assistant turn), each tool's
 * images after a text part naming its call. */
export function toolImagesAsUserTurn(msgs: ChatMessage[]): ChatMessage[] {
  if (!msgs.some((m) => toolImages(m).length)) return msgs;
  const out: ChatMessage[] = [];
  let held: ContentPart[] = [];
  const flush = () => {
    if (held.length) out.push({ role: "user", content: held.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n"), parts: held });
    held = [];
  };
  for (const m of msgs) {
    if (m.role !== "tool") flush();
    const images = toolImages(m);
    if (!images.length) {
      out.push(m);
      continue;
    }
    const { parts: _parts, ...text } = m;
    out.push(text);
    held.push(toolImagesLabel(m), ...images);
  }
  flush();
  return out;
}

export const dataUrl = (s: Extract<ImageSource, { type: "base64" }>) => `data:${s.mediaType};base64,${s.data}`;

const EXT_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };

/** The media type an image URL's file extension suggests (Gemini's file_data needs one). */
export function urlMediaType(url: string): string {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    /* keep the text */
  }
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  return (ext && EXT_TYPES[ext]) || "image/jpeg";
}

/** Rough prompt tokens of an image for reservations (vendors bill ~85-1,600 a picture). */
export const IMAGE_TOKEN_ESTIMATE = 1600;
