import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LoadMonitor } from '../../src/telemetry/load-monitor.js';
import { OriginFull, OriginSlot, UpstreamInflight } from '../../src/upstream/inflight.js';

/** A monitor on a clock the test moves: each `tick(late)` is one timer firing `late` ms after it was due. */
function driven(opts: { stallShedShare?: number; ingressBudget?: number } = {}) {
  let now = 0;
  const m = new LoadMonitor({ windowMs: 1000, stallShedShare: opts.stallShedShare ?? 0.5, ingressBudget: opts.ingressBudget, tickMs: 50 }, () => now);
  return {
    m,
    tick(late = 0) {
      now += 50 + late;
      m.sample();
    },
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('load monitor', () => {
  it('measures the stall share over its window and sheds with hysteresis', () => {
    const d = driven();
    d.tick(150);
    d.tick(400);
    assert.equal(d.m.loopStallShare, 0.55);
    assert.equal(d.m.loopStalled, true);
    // the first stall leaves the window: 0.4 is under 0.5 but not under 3/4 of it, so still stalled
    let ticks = 0;
    while (d.m.loopStallShare > 0.4 && ticks++ < 40) d.tick();
    assert.equal(d.m.loopStallShare, 0.4);
    assert.equal(d.m.loopStalled, true);
    while (d.m.loopStallShare > 0 && ticks++ < 80) d.tick();
    assert.equal(d.m.loopStallShare, 0, 'a quiet window clears the share');
    assert.equal(d.m.loopStalled, false);
  });

  it('hysteresis: entered above the share, left only below 3/4 of it', () => {
    const d = driven();
    d.tick(450);
    assert.equal(d.m.loopStalled, false, '0.45 of the window is not past 0.5');
    d.tick(100);
    assert.equal(d.m.loopStalled, true);
  });

  it('shadow work is shed before requests are: at half the stall share, at half the ingress budget, and while anything was shed', () => {
    const d = driven({ ingressBudget: 1000 });
    assert.equal(d.m.shouldShedShadow(), false);
    d.tick(300);
    assert.equal(d.m.shouldShedShadow(), true, '0.3 stalled: above half of 0.5');
    assert.equal(d.m.loopStalled, false, 'requests are not shed yet');
    for (let i = 0; i < 25; i++) d.tick();
    assert.equal(d.m.shouldShedShadow(), false);
    d.m.enter(600);
    assert.equal(d.m.shouldShedShadow(), true, 'more than half the budget in flight');
    d.m.leave(600);
    d.m.shed('queue_wait', 'test');
    assert.equal(d.m.shouldShedShadow(), true);
    assert.equal(d.m.shedding, true);
    assert.equal(d.m.ready, false, 'not ready while shedding');
    d.advance(1001);
    assert.equal(d.m.shedding, false);
    assert.equal(d.m.ready, true);
    d.m.drain();
    assert.equal(d.m.ready, false, 'not ready while draining');
  });

  it('Retry-After comes from the drain rate: in flight over completions per second, 1 to 30', () => {
    const d = driven();
    assert.equal(d.m.retryAfterS(), 1, 'idle');
    for (let i = 0; i < 100; i++) d.m.enter(0);
    assert.equal(d.m.retryAfterS(), 30, 'nothing completed: the longest');
    for (let i = 0; i < 10; i++) d.m.leave(0);
    // 10 completions in the 1 s window: 10/s; 90 in flight drain in 9 s
    assert.equal(d.m.retryAfterS(), 9);
    for (let i = 0; i < 89; i++) d.m.leave(0);
    assert.equal(d.m.retryAfterS(), 1);
    assert.equal(d.m.shed('loop_stall', 'stalled').carriesHeader, true);
  });

  it('a full origin is a dispatch-side shed without x-gw-error, counted only once it is the answer', () => {
    const shed: string[] = [];
    const m = new LoadMonitor({ windowMs: 1000, stallShedShare: 0.5, countShed: (where) => shed.push(where) });
    const origins = new UpstreamInflight(1, m);
    const slot = origins.enter('http://a');
    assert.ok(slot instanceof OriginSlot);
    const full = origins.enter('http://a');
    assert.ok(full instanceof OriginFull);
    assert.equal(full.type, 'overloaded');
    assert.equal(full.carriesHeader, false, 'a dispatch-side shed carries no x-gw-error');
    assert.equal(full.retryAfterS, 1);
    assert.ok(origins.enter('http://b') instanceof OriginSlot, 'another origin has room');
    assert.deepEqual([shed, m.shedding], [[], false], 'refused, yet no request was shed: another destination may take it');
    origins.answered();
    assert.deepEqual([shed, m.shedding], [['upstream_inflight'], true]);
    slot.release();
    assert.ok(origins.enter('http://a') instanceof OriginSlot, 'room again once a call left');
  });

  it('a slot given back twice is given back once: it never frees another call\'s', () => {
    const origins = new UpstreamInflight(2, new LoadMonitor({ windowMs: 1000, stallShedShare: 0.5 }));
    const first = origins.enter('http://a') as OriginSlot;
    origins.enter('http://a');
    first.release();
    first.release();
    assert.equal(origins.full('http://a'), false);
    assert.ok(origins.enter('http://a') instanceof OriginSlot);
    assert.ok(origins.enter('http://a') instanceof OriginFull, 'the other call still holds its slot');
  });

  it('says, without entering, which origins are full and whether any is', () => {
    const origins = new UpstreamInflight(2, new LoadMonitor({ windowMs: 1000, stallShedShare: 0.5 }));
    const a = origins.enter('http://a') as OriginSlot;
    assert.deepEqual([origins.anyFull, origins.full('http://a')], [false, false]);
    origins.enter('http://a');
    const b = origins.enter('http://b') as OriginSlot;
    origins.enter('http://b');
    assert.deepEqual([origins.anyFull, origins.full('http://a'), origins.full('http://b'), origins.full('http://c')], [true, true, true, false]);
    assert.ok(origins.enter('http://a') instanceof OriginFull, 'a refused call takes no slot');
    a.release();
    assert.deepEqual([origins.anyFull, origins.full('http://a')], [true, false], 'b is still full');
    b.release();
    assert.equal(origins.anyFull, false);
  });
});
