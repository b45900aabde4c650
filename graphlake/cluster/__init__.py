"""Work spread over a Ray cluster: ingest parses and frame reads past one process.

The local engine (one process, or worker processes on this machine) stays the default; these
modules run the same stages as Ray tasks and actors and hand their results back to the driver,
which commits them exactly as the local path does (one lake version per ingest, frames appended
in order per recording). ``--engine ray`` selects them; ``--address`` names a running cluster
(``ray start --head``), otherwise one is started on this machine for the command.

* :mod:`graphlake.cluster.runtime`: attaching to (or starting) the cluster;
* :mod:`graphlake.cluster.ingest`: units parsed into staging by Ray tasks;
* :mod:`graphlake.cluster.frames`: recordings sampled by tasks, read and embedded by actors.

See docs/scaling.md for what each stage costs and how the lake sits on shared storage.
"""
