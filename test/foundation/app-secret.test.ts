import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, createTestDatabase, makeUser, type TestApp, type TestDatabase } from '../harness.js';

describe('APP_SECRET shared by every process on one database', () => {
  let db: TestDatabase;
  let a: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createTestApp({ database: db.database });
  });
  afterAll(async () => {
    await a?.close();
    await db?.drop();
  });

  it('a second process with another APP_SECRET refuses to start; one with the same secret starts', async () => {
    await makeUser(a);
    await expect(createTestApp({ database: db.database, env: { APP_SECRET: 'another-app-secret-0123456789abcdef0123' } })).rejects.toThrow(
      /APP_SECRET differs/,
    );
    const same = await createTestApp({ database: db.database });
    expect((await same.request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    await same.close();
    // the reserved check row is not a setting
    const list = await a.adminData<{ key: string }[]>('GET', '/admin/v1/settings');
    expect(list.map((s) => s.key)).not.toContain('__app_secret_check');
  });
});
