"""Consumer lag: Burrow's sliding-window evaluation of commits against log-end offsets, made rebalance-aware."""
