import { PgBoss } from 'pg-boss';
import { dropSchema, sleep } from './harness.ts';
import { percentiles } from './stats.ts';
const url = 'postgres://postgres@127.0.0.1:5432/herald_bench';
const conc = Number(process.argv[2] ?? 16);
await dropSchema(url, 'pgboss_bench');
const boss = new PgBoss({ connectionString: url, schema: 'pgboss_bench', useListenNotify: true });
boss.on('error', (e) => console.error('ERR', e));
await boss.start();
await boss.createQueue('noop', { notify: true });
const db = boss.getDb() as any;
const orig = db.executeSql.bind(db);
const times = new Map<string, number[]>();
db.executeSql = async (text: string, values: unknown, o: unknown) => {
  const t = performance.now();
  try { return await orig(text, values, o); } finally {
    const k = text.replace(/\s+/g, ' ').trim().slice(0, 70);
    (times.get(k) ?? times.set(k, []).get(k)!).push(performance.now() - t);
  }
};
const sent: number[] = [], got: number[] = [];
await boss.work<{ i: number }>('noop', { batchSize: 50, localConcurrency: conc }, async (b) => { for (const j of b) got[j.data.i] = performance.now(); });
for (let i = 0; i < 105; i++) { sent[i] = performance.now(); await boss.send('noop', { i }); await sleep(10); }
await sleep(500);
console.log('total', percentiles(got.slice(5).map((g, k) => g - sent[k + 5]!)));
for (const [k, v] of times) console.log(v.length, percentiles(v).p50.toFixed(2), k);
await boss.stop();
