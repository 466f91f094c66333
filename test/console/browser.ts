// Debian's chromium driven by playwright-core (never a browser download): one headless browser
// per suite, a fresh profile, no background network.
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const CHROMIUM = process.env.SVC_CHROMIUM ?? "/usr/bin/chromium";
export const haveChromium = existsSync(CHROMIUM);

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /** console errors and uncaught exceptions seen in the page */
  errors: string[];
  close(): Promise<void>;
}

export async function openBrowser(): Promise<TestBrowser> {
  const profile = mkdtempSync(path.join(os.tmpdir(), "svc-chromium-"));
  // a fresh profile (playwright passes it as --user-data-dir)
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1200, height: 820 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return {
    context,
    page,
    errors,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
