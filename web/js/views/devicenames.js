// devicenames.js -- what the Device Trace Viewer calls the store's device
// counter tracks: the one map from a counter track's source (its name in
// the store and the API) to the label, unit and series labels shown.

/**
 * source -> { label (null: keep the store's name), unit (of series 0, as
 * format.js fmtValue() reads it), series (labels of the series, in order) }.
 */
export const DEVICE_COUNTERS = {
  sbuf: { label: 'State Buffer Usage', unit: '%', series: ['Utilization'] },
  psum: { label: 'PSUM Usage', unit: '%', series: ['Utilization'] },
  dma_throughput: { label: 'DMA Throughput', unit: 'B/s', series: ['Throughput'] },
  mfu: { label: 'Estimated Instant MFU', unit: '%', series: ['MFU'] },
  semaphore: { label: null, unit: '', series: ['Value'] },
};

/**
 * The device tracks of GET /device-profiles/{id}/tracks with the counters
 * renamed for people: name (in its group), unit, seriesLabels, and
 * storeName (the name SQL and the API use).
 */
export function deviceTrackNames(tracks) {
  return tracks.map((t) => {
    const h = t.kind === 'counter' ? DEVICE_COUNTERS[t.source] : null;
    if (!h) return t;
    const name = h.label ? (t.group ? `${t.group}/${h.label}` : h.label) : t.name;
    return { ...t, name, unit: h.unit, seriesLabels: h.series, storeName: t.name };
  });
}
