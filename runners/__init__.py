"""The harness engine: contracts, episode loop, backbones, cache, store, sweep, aggregation."""
