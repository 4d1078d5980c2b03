import type { DayUsage } from '../../src/service/daily-usage.ts';
import { html, type Html } from './html.ts';
import type { PageContext } from './page-context.ts';

const WIDTH = 600;
const HEIGHT = 140;
const AXIS = 18;

/**
 * One series of the last days as a bar chart in plain SVG (no library, no script): bars, the
 * highest value and the first and last day written out, each bar's day and value as its title.
 * Readable without colour (bars against a white ground, the values in words beside it, and the
 * table under it for the exact numbers).
 */
function bars(usage: DayUsage[], pick: (day: DayUsage) => number, title: string, id: string): Html {
  const max = Math.max(1, ...usage.map(pick));
  const slot = WIDTH / usage.length;
  return html`<figure class="chart">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT + AXIS}" role="img" aria-labelledby="${id}">
<title id="${id}">${title}</title>
<line x1="0" y1="${HEIGHT}" x2="${WIDTH}" y2="${HEIGHT}" class="axis"></line>
${usage.map((day, i) => {
    const value = pick(day);
    const height = Math.round((value / max) * (HEIGHT - 16));
    return html`<rect x="${(i * slot + slot * 0.15).toFixed(1)}" y="${HEIGHT - height}" width="${(slot * 0.7).toFixed(1)}" height="${height}" class="bar"><title>${day.day}: ${value}</title></rect>`;
  })}
<text x="0" y="12" class="label">${max}</text>
<text x="0" y="${HEIGHT + AXIS - 4}" class="label">${usage[0]!.day}</text>
<text x="${WIDTH}" y="${HEIGHT + AXIS - 4}" class="label end">${usage[usage.length - 1]!.day}</text>
</svg>
<figcaption>${title}</figcaption>
</figure>`;
}

export function usageCharts(context: PageContext, usage: DayUsage[]): Html {
  const { t } = context;
  return html`<h2 id="usage">${t('usage')}</h2>
${bars(usage, (day) => day.conversions, t('conversionsPerDay'), 'chart-conversions')}
${bars(usage, (day) => day.credits, t('creditsPerDay'), 'chart-credits')}
<details><summary>${t('usageTable')}</summary>
<div class="table-wrap"><table>
<thead><tr><th scope="col">${t('day')}</th><th scope="col">${t('conversions')}</th><th scope="col">${t('credits')}</th></tr></thead>
<tbody>${usage.map((day) => html`<tr><td>${day.day}</td><td>${day.conversions}</td><td>${day.credits}</td></tr>`)}</tbody>
</table></div></details>`;
}
