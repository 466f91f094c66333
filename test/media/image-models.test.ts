// GET /v1/images/models lists the image models of image-capable providers, not every model of such
// a provider: a model's own `capabilities`, else its media prices, say what it serves.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";

let s: TestSvc | undefined;
afterAll(async () => {
  await s?.stop();
});

describe("GET /v1/images/models", () => {
  it("lists image models only, from a provider that also serves transcription and video", async () => {
    const dir = await tempDir("svc-image-models-");
    await writeFile(
      path.join(dir, "media.yaml"),
      [
        "apiVersion: svc/v1",
        "kind: Provider",
        "metadata: {name: media}",
        "spec:",
        "  type: openai",
        "  baseUrl: http://127.0.0.1:9/v1",
        "  capabilities: [transcription, image_generation, image_edit, video]",
        "  models:",
        "    - {name: whisper-1, perAudioMinute: 0.006}",
        "    - {name: gpt-image-1, perImage: 0.04}",
        "    - {name: video-1, capabilities: [video]}",
        "    - {name: edit-only, capabilities: [image_edit]}",
        "    - {name: unlabelled}",
        "",
      ].join("\n"),
    );
    s = await startTestSvc({ config: [dir] });
    const r = await fetch(`${s.url}/v1/images/models`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { data: Array<{ id: string; capabilities: string[] }> };
    expect(Object.fromEntries(body.data.map((m) => [m.id, m.capabilities]))).toEqual({
      "gpt-image-1": ["image_generation", "image_edit"],
      "edit-only": ["image_edit"],
      unlabelled: ["image_generation", "image_edit"],
    });
  });
});
