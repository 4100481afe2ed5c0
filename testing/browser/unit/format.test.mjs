// The page writes figures as pado's terminal summary does: the same cases as the
// Rust tests of pado-base's `units` (crates/base/src/units).
import test from 'node:test';
import assert from 'node:assert/strict';
import * as fmt from '../../../crates/dashboard/assets/format.js';

test('milliseconds read as in the terminal summary', () => {
  assert.equal(fmt.ms(0), '0');
  assert.equal(fmt.ms(0.4123), '0.412');
  assert.equal(fmt.ms(12.345), '12.35');
  assert.equal(fmt.ms(240.53), '240.5');
  assert.equal(fmt.ms(12034.4), '12034');
  assert.equal(fmt.ms(null), '–');
  assert.equal(fmt.ms(NaN), '–');
});

test('rates: whole from 100, one decimal below', () => {
  assert.equal(fmt.rate(1234.4), '1234');
  assert.equal(fmt.rate(100), '100');
  assert.equal(fmt.rate(12.54), '12.5');
  assert.equal(fmt.rate(0), '0.0');
  assert.equal(fmt.rate(undefined), '–');
});

test('counts get thousands separators', () => {
  assert.equal(fmt.thousands(1234567), '1,234,567');
  assert.equal(fmt.thousands(999), '999');
  assert.equal(fmt.thousands(1000), '1,000');
  assert.equal(fmt.thousands(0), '0');
});

test('run lengths as pado writes them', () => {
  assert.equal(fmt.duration(12.34), '12.3s');
  assert.equal(fmt.duration(605), '10m05s');
  assert.equal(fmt.duration(14400), '4h00m00s');
  assert.equal(fmt.clock(90), '1m30s');
  assert.equal(fmt.clock(120), '2m');
  assert.equal(fmt.clock(45), '45s');
});

test('mixed values and percentages', () => {
  assert.equal(fmt.value(1234.4), '1234');
  assert.equal(fmt.value(12.345), '12.35');
  assert.equal(fmt.value(0.4123), '0.412');
  assert.equal(fmt.percent2(0.0123), '1.23%');
  assert.equal(fmt.tick(25000), '25k');
  assert.equal(fmt.tick(2.5), '2.5');
});
