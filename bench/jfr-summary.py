#!/usr/bin/env python3
"""Where a Conclave server's CPU samples went, from a JFR recording or async-profiler's collapsed stacks (issue 42).

    bench/jfr-summary.py [--jfr /path/to/jfr] [--top N] recording.jfr...
    bench/jfr-summary.py --collapsed [--top N] stacks.collapsed...

--collapsed reads async-profiler's output (`-agentpath:libasyncProfiler.so=start,event=cpu,threads,collapsed,file=F`:
one line per distinct stack, thread first, root to top, then its sample count), which sees native, kernel, compiler and
GC threads too. Mind docs/performance.md's trap: as an agent here, async-profiler 4.0 slowed the servers 7-13-fold.

For each recording: the execution samples by thread (thread names with their numbers and IDs folded), by stage (the
first frame, from the top of the stack, that belongs to a known stage: HTTP parsing and encoding, the gRPC transport,
the Raft core, the node's driver, the storage worker and its syncs, the state machine's applies, snapshots, reads), the
top frames (the method on top of the stack), the syncs (jdk.FileForce over the recording's threshold: count, sum,
largest) and the collections (jdk.GarbageCollection: count, sum of pauses, longest). Uses `jfr print --json`; JFR_TOOL
or --jfr picks the jfr binary (a newer JDK's reads older recordings).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

# (stage, pattern on "class.method"), tried from the top frame down; the first stage found names the sample.
STAGES = [
    ("storage: sync (force)", r"FileChannelImpl\.force|FileDispatcherImpl\.force"),
    ("storage: log append/write", r"io\.conclave\.plugin\.storage|SegmentedLog|SegmentLogStore"),
    ("snapshot (capture/write)", r"KvStateMachine\.(write|capture)|SnapshotStore|Snapshot"),
    ("state machine apply", r"KvStateMachine\.apply|StateStore.*commit|HeapStateStore|\.kv\.KvTables"),
    ("read (view, answer)", r"KvService\.(read|view)|KvAnswer|readyToRead|linearizableRead"),
    ("Raft core", r"io\.conclave\.engine\.raft\.core\."),
    ("node driver (RaftNode, ReadyCycle, PendingWrites)", r"io\.conclave\.engine\.raft\.runtime\."),
    ("services (RaftService, KvService)", r"io\.conclave\.engine\.raft\.service\."),
    ("transport (gRPC, HTTP/2, protobuf)", r"io\.conclave\.engine\.raft\.transport|io\.vertx\.grpc|Http2|io\.grpc|protobuf"),
    ("HTTP API (Conclave's adapters, JSON)", r"io\.conclave\.engine\.raft\.http\.|com\.fasterxml|JsonObject|Json\."),
    ("HTTP/1 server (Vert.x, Netty codec)", r"io\.vertx\.core\.http|HttpServer|HttpObjectDecoder|HttpObjectEncoder|io\.netty\.handler\.codec\.http\."),
    ("Netty/Vert.x I/O (channels, event loop)", r"io\.netty|io\.vertx"),
    ("JDK / other", r"."),
]
COMPILED = [(name, re.compile(pattern)) for name, pattern in STAGES]


def events(tool, path, names):
    text = subprocess.run([tool, "print", "--json", "--stack-depth", "64", "--events", names, path],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)["recording"]["events"]


def frame_name(frame):
    method = frame["method"]
    return method["type"]["name"] + "." + method["name"]


def thread_group(thread):
    name = (thread or {}).get("javaName") or (thread or {}).get("osName") or "?"
    name = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", name)
    return re.sub(r"\d+", "N", name)


def millis(duration):
    # JSON durations look like "PT0.0152S" (ISO 8601)
    match = re.match(r"PT(?:(\d+)M)?([\d.]+)S", duration or "")
    return 0.0 if not match else int(match.group(1) or 0) * 60000 + float(match.group(2)) * 1000


GENERIC = {"Netty/Vert.x I/O (channels, event loop)", "JDK / other"}


def stage_of(frames):
    """The stage of the frame nearest the top of the stack that belongs to a specific stage, else a generic one."""
    for frame in frames:
        for name, pattern in COMPILED:
            if name not in GENERIC and pattern.search(frame):
                return name
    return next((name for name, pattern in COMPILED if any(pattern.search(f) for f in frames)), "JDK / other")


def summarize(tool, path, top):
    samples = events(tool, path, "jdk.ExecutionSample")
    threads, stages, tops = collections.Counter(), collections.Counter(), collections.Counter()
    for sample in samples:
        values = sample["values"]
        threads[thread_group(values.get("sampledThread"))] += 1
        frames = [frame_name(f) for f in (values.get("stackTrace") or {}).get("frames", [])]
        if frames:
            tops[frames[0]] += 1
        stages[stage_of(frames)] += 1
    total = max(1, len(samples))
    print(f"== {path}: {len(samples)} execution samples")
    for title, counter in (("by thread", threads), ("by stage", stages), ("top frames", tops)):
        print(f"  {title}:")
        for name, count in counter.most_common(top):
            print(f"    {count:6d} {100.0 * count / total:5.1f}%  {name}")
    forces = [millis(e["values"].get("duration")) for e in events(tool, path, "jdk.FileForce")]
    if forces:
        print(f"  syncs over the threshold: {len(forces)}, {sum(forces):.1f} ms in all, longest {max(forces):.1f} ms")
    collections_ = [millis(e["values"].get("sumOfPauses")) for e in events(tool, path, "jdk.GarbageCollection")]
    if collections_:
        print(f"  collections: {len(collections_)}, pauses {sum(collections_):.1f} ms in all, longest {max(collections_):.1f} ms")
    else:
        print("  collections: none")


def summarize_collapsed(path, top):
    """The same tables from async-profiler's collapsed stacks ("thread;root;...;top count" per line)."""
    threads, stages, tops = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            count = int(count)
            frames = stack.split(";")
            thread = frames.pop(0) if frames and frames[0].startswith("[") else "?"
            thread = re.sub(r" tid=\d+", "", thread.strip("[]"))
            frames = [f.replace("/", ".").removesuffix("_[j]").removesuffix("_[i]").removesuffix("_[0]") for f in reversed(frames)]
            threads[re.sub(r"\d+", "N", thread)] += count
            if frames:
                tops[frames[0]] += count
            stages[stage_of(frames)] += count
            total += count
    total = max(1, total)
    print(f"== {path}: {total} CPU samples")
    for title, counter in (("by thread", threads), ("by stage", stages), ("top frames", tops)):
        print(f"  {title}:")
        for name, count in counter.most_common(top):
            print(f"    {count:6d} {100.0 * count / total:5.1f}%  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jfr", default=os.environ.get("JFR_TOOL", "jfr"))
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--collapsed", action="store_true", help="the inputs are async-profiler's collapsed stacks")
    parser.add_argument("recordings", nargs="+")
    arguments = parser.parse_args()
    for path in arguments.recordings:
        if arguments.collapsed:
            summarize_collapsed(path, arguments.top)
        else:
            summarize(arguments.jfr, path, arguments.top)


if __name__ == "__main__":
    sys.exit(main())
