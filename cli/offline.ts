// Working on the store file directly when no server runs. A running server notices these writes
// on its next resync (ResourceStore.reload sees the revision moved).
import { mkdir } from "node:fs/promises";
import type { ResourceStore } from "../prisma/resource-store";
import { storeFile } from "../controllers/paths";

export async function withOfflineStore<T>(home: string, f: (store: ResourceStore) => Promise<T>): Promise<T> {
  await mkdir(home, { recursive: true });
  // Prisma loads in ~0.2 s: only when a command works offline
  const { openDb } = await import("../prisma/client");
  const { ResourceStore } = await import("../prisma/resource-store");
  const db = await openDb(storeFile(home), { backgroundCheckpoints: false });
  try {
    const store = await ResourceStore.open(db.prisma);
    try {
      return await f(store);
    } finally {
      await store.close();
    }
  } finally {
    await db.close();
  }
}
