"""Reading sources (driver, plain Python): walk the input, unpack archives, split YARN logs, classify each source,
detect its line layout, read odd shapes into plain lines, and stage clean UTF-8 files for the scan."""
