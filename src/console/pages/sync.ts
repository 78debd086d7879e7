import { allowSilence, LONG_ACTION_MARGIN_SECONDS } from '../../http/server-options.js';
import { html } from '../html.js';
import { countText, timeText } from '../i18n.js';
import { csrfField } from '../layout.js';
import type { ConsolePage, Ctx } from '../page.js';

const T = {
  name: { vi: 'Đồng bộ', en: 'Sync' },
  status: { vi: 'Trạng thái', en: 'Status' },
  source: { vi: 'Trang nguồn (source_url)', en: 'Source site (source_url)' },
  off: { vi: 'tắt: chưa đặt source_url', en: 'off: source_url is not set' },
  lastOk: { vi: 'Thành công gần nhất', en: 'Last success' },
  never: { vi: 'chưa có', en: 'never' },
  failures: { vi: 'Lỗi liên tiếp', en: 'Failures in a row' },
  stuck: { vi: 'Đơn nguồn bị kẹt', en: 'Stuck source orders' },
  run: { vi: 'Đồng bộ ngay', en: 'Run now' },
  force: { vi: 'bỏ qua sync_interval_seconds', en: 'ignore sync_interval_seconds' },
  full: { vi: 'đọc toàn bộ danh mục nguồn', en: 'read the whole source catalogue' },
  runs: { vi: 'Các lần chạy', en: 'Runs' },
  started: { vi: 'Bắt đầu', en: 'Started' },
  mode: { vi: 'Kiểu', en: 'Mode' },
  result: { vi: 'Kết quả', en: 'Result' },
  counts: { vi: 'Tạo / sửa / thiếu / bỏ qua', en: 'Created / updated / missing / skipped' },
  error: { vi: 'Lỗi', en: 'Error' },
  ran: { vi: 'Đã chạy', en: 'Ran' },
  notRun: { vi: 'Không chạy', en: 'Did not run' },
  running: { vi: 'đang chạy', en: 'running' },
};

/** Runs listed on the page: the newest first. */
const RUNS_SHOWN = 50;

/** Sync (docs/console.md, "Pages"): the figures of /metrics, run now (the admin API's sync run), the last runs. */
export const syncPage: ConsolePage = {
  href: '/console/sync',
  name: T.name,
  register(r, deps) {
    async function page(ctx: Ctx, o: { notice?: string; refusal?: string; status?: number } = {}) {
      const { t, lang, timeZone, csrf } = ctx;
      const [f, runs, sourceUrl] = await Promise.all([deps.facts.get(), deps.sync.status(RUNS_SHOWN), deps.settings.get('source_url')]);
      return {
        title: t(T.name),
        at: '/console/sync',
        ...o,
        body: html`<div class="card"><h2>${t(T.status)}</h2><table id="sync-status"><tbody>
<tr><th>${t(T.source)}</th><td class="wrap">${sourceUrl || t(T.off)}</td></tr>
<tr><th>${t(T.lastOk)}</th><td>${f.syncLastSuccessAt ? timeText(f.syncLastSuccessAt, lang, timeZone) : t(T.never)}</td></tr>
<tr><th>${t(T.failures)}</th><td>${countText(f.syncConsecutiveFailures, lang)}</td></tr>
<tr><th>${t(T.stuck)}</th><td>${countText(f.stuckOrders, lang)}</td></tr></tbody></table>
<form method="post" action="/console/sync/run" class="fields">${csrfField(csrf)}
<label><span><input type="checkbox" name="force" value="true"> ${t(T.force)}</span></label>
<label><span><input type="checkbox" name="full" value="true"> ${t(T.full)}</span></label>
<button type="submit">${t(T.run)}</button></form></div>
<div class="card"><h2>${t(T.runs)}</h2><div class="scroll"><table id="sync-runs"><thead><tr><th>#</th><th>${t(T.started)}</th><th>${t(T.mode)}</th><th>${t(T.result)}</th><th class="num">${t(T.counts)}</th><th>${t(T.error)}</th></tr></thead><tbody>
${runs.map(
  (
    run,
  ) => html`<tr><td>${run.id}</td><td>${timeText(run.started_at, lang, timeZone)}</td><td>${run.mode}</td><td>${run.ok === null ? t(T.running) : run.ok ? 'ok' : 'failed'}</td>
<td class="num">${run.created} / ${run.updated} / ${run.missing} / ${run.skipped}</td><td class="wrap">${run.error_code ?? ''} ${run.error ?? ''}</td></tr>`,
)}
</tbody></table></div></div>`,
      };
    }
    r.get('/console/sync', async (ctx) => page(ctx));
    r.post('/console/sync/run', async (ctx) => {
      const body = { force: ctx.form.force === 'true', full: ctx.form.full === 'true' };
      // As the admin API's route: the answer comes when the run ends, which may be long after IDLE_TIMEOUT_MS.
      allowSilence(ctx.req.raw, ((await deps.settings.get('sync_run_timeout_seconds')) + LONG_ACTION_MARGIN_SECONDS) * 1000);
      const done = await ctx.action('adminSyncRun', { body }, () => deps.cron.syncNow(body.force, body.full));
      if (!done.ok) return page(ctx, { refusal: done.message, status: done.status });
      const v = done.value;
      const notice = v.ran
        ? `${ctx.t(T.ran)}: ${v.mode ?? ''} +${v.created ?? 0} ~${v.updated ?? 0} -${v.missing ?? 0}`
        : `${ctx.t(T.notRun)}: ${v.reason ?? ''}`;
      return page(ctx, { notice });
    });
  },
};
