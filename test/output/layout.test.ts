import { describe, expect, it } from 'vitest';
import {
  currentDescriptorPath,
  ownRun,
  parseShardLabel,
  pendingPath,
  pendingRunId,
  runPath,
  shardLabelOfRun,
  shardNames,
  shardOfCurrentDescriptor,
  sourcePath,
} from '../../src/output/layout.ts';

describe('the output layout', () => {
  it('names a shard’s lock, pointer and run suffix, and reads the shard back from a run id', () => {
    const names = shardNames({ index: 2, count: 3 });
    expect(names).toEqual({
      lock: '.lock-shard-2-of-3',
      latest: 'latest-shard-2-of-3',
      runSuffix: '-shard-2-of-3',
    });
    expect(shardNames(undefined)).toEqual({ lock: '.lock', latest: 'latest', runSuffix: '' });
    expect(shardLabelOfRun(`20261121T235500Z-2${names.runSuffix}`)).toBe('shard-2-of-3');
    expect(shardLabelOfRun('20261121T235500Z-sample')).toBeNull();
    expect(parseShardLabel('shard-2-of-3')).toEqual({ index: 2, count: 3 });
    expect(parseShardLabel('shard-4-of-3')).toBeNull();
    expect(parseShardLabel('shard-2-of-3.json')).toBeNull();
  });

  it('tells a shard’s runs from the unsharded pipeline’s', () => {
    expect(ownRun('20261121T235500Z', '')).toBe(true);
    expect(ownRun('20261121T235500Z-shard-1-of-2', '')).toBe(false);
    expect(ownRun('20261121T235500Z-shard-1-of-2', '-shard-1-of-2')).toBe(true);
    expect(ownRun('20261121T235500Z-shard-2-of-2', '-shard-1-of-2')).toBe(false);
  });

  it('builds and parses the paths beside the runs', () => {
    expect(runPath('20261121T235500Z')).toBe('runs/20261121T235500Z');
    expect(runPath('20261121T235500Z', 'manifest.json')).toBe('runs/20261121T235500Z/manifest.json');
    expect(pendingPath('20261121T235500Z')).toBe('.pending/20261121T235500Z.json');
    expect(pendingRunId('20261121T235500Z.json')).toBe('20261121T235500Z');
    expect(pendingRunId('x/20261121T235500Z.json')).toBeNull();
    expect(pendingRunId('20261121T235500Z.tmp')).toBeNull();
    expect(sourcePath(undefined)).toBe('source.json');
    expect(sourcePath({ index: 1, count: 2 })).toBe('sources/shard-1-of-2.json');
    expect(currentDescriptorPath(undefined)).toBe('current/datapackage.json');
    expect(currentDescriptorPath('shard-1-of-2')).toBe('current/datapackage-shard-1-of-2.json');
    expect(shardOfCurrentDescriptor('datapackage-shard-1-of-2.json')).toBe('shard-1-of-2');
    expect(shardOfCurrentDescriptor('datapackage.json')).toBeNull();
  });
});
