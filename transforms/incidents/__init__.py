"""Cross-group incidents: the rebalances and detections of many groups within a window, linked to one cause (a
broker restart or coordinator move, a deployment wave, else "unexplained"). Pure: rows in, `incidents` rows out."""
