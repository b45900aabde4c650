"""Recordings as data (the vision extra): frames and clips at session times (``video``), which
frames to read (``sampler``), reading them (``ocr``), embedding them (``embed``), the LanceDB
tables beside the lake (``store``) and the ``graphlake frames index`` run (``indexer``);
``screens`` renders screen recordings for the demo, the tests and the benchmarks."""
