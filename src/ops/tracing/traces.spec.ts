import { trace } from '@opentelemetry/api';
import { activeTraceParent, inSpan, inStoredTrace, linkTo, startSpan, startStoredSpan, tracesEnabled } from './traces';

/** Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT): nothing is started, looked up or stored. */
describe('traces, off', () => {
  const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it('answers no trace parent, even inside a span another library started', async () => {
    expect(tracesEnabled()).toBe(false);
    expect(activeTraceParent()).toBeNull();
    const spy = jest.spyOn(trace, 'getActiveSpan');
    await inSpan('outer', {}, async () => expect(activeTraceParent()).toBeNull());
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it('runs the work with no span, and passes its result and its error through', async () => {
    const getTracer = jest.spyOn(trace, 'getTracer');
    await expect(inSpan('work', {}, async (span) => (span === undefined ? 'no span' : 'span'))).resolves.toBe('no span');
    await expect(inStoredTrace(parent, 'work', {}, async (span) => span)).resolves.toBeUndefined();
    await expect(inSpan('work', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(startSpan('work', {})).toBeUndefined();
    expect(startStoredSpan(parent, 'work', {})).toBeUndefined();
    expect(linkTo(parent)).toEqual([]);
    expect(getTracer).not.toHaveBeenCalled();
    getTracer.mockRestore();
  });
});
