"""The on-disk columnar cache of rollout runs: segments, manifest, growth, compaction."""
