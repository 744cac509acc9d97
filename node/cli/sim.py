"""`tangled sim`: a simulated network of real nodes on virtual time (node/sim/network.py)."""

from __future__ import annotations

import math

import click

from tanglenode.node.cli.support import BadInput, emit_json, json_option

UNITS = {"ms": 0.001, "s": 1.0}


def seconds(text: str) -> float:
    """`100ms`, `0.1s` or `0.1` (seconds) as seconds."""
    for unit, scale in UNITS.items():
        if text.endswith(unit):
            text, factor = text[: -len(unit)], scale
            break
    else:
        factor = 1.0
    try:
        value = float(text) * factor
    except ValueError:
        raise BadInput(f"{text!r} is not a duration such as 100ms or 0.1s") from None
    if not math.isfinite(value) or value < 0 or value > 3600:
        raise BadInput("a duration is 0 to 3600 s")
    return value


@click.command("sim")
@click.option(
    "--nodes", type=click.IntRange(2, 10000), default=25, show_default=True, help="nodes simulated"
)
@click.option(
    "--degree", type=click.IntRange(1, 64), default=5, show_default=True, help="peers a node has"
)
@click.option(
    "--topology",
    type=click.Choice(["regular", "small-world", "pubs"]),
    default="regular",
    show_default=True,
    help="the network's shape (docs/SIMULATOR.md)",
)
@click.option("--latency", default="100ms", show_default=True, help="one way, per link")
@click.option("--bandwidth", type=click.FloatRange(1, None), default=None, help="bytes/s per link")
@click.option(
    "--loss",
    type=click.FloatRange(0, 0.5),
    default=0.0,
    show_default=True,
    help="chance a send is retransmitted",
)
@click.option(
    "--messages",
    type=click.IntRange(1, 1_000_000),
    default=100,
    show_default=True,
    help="messages published and measured",
)
@click.option("--interval", default="50ms", show_default=True, help="between two publishes")
@click.option("--settle", default="60s", show_default=True, help="wait after the last publish")
@click.option("--seed", type=int, default=1, show_default=True, help="the same seed, the same run")
@click.option(
    "--scenario",
    type=click.Choice(["publish", "partition", "churn", "spammer", "erase", "reconnect"]),
    default="publish",
    show_default=True,
    help="what happens while the messages go out (docs/SIMULATOR.md)",
)
@click.option(
    "--churn",
    type=click.FloatRange(0, 1),
    default=0.2,
    show_default=True,
    help="--scenario churn: the share of nodes that crash and restart",
)
@click.option(
    "--feeds",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    help="--scenario reconnect: the feeds every node carries",
)
@click.option(
    "--differ",
    type=click.IntRange(0, 100_000),
    default=1,
    show_default=True,
    help="--scenario reconnect: of them, those node 0 holds one message more of",
)
@click.option("--flood", is_flag=True, help="every peer streams every feed (the old gossip)")
@click.option(
    "--warmup/--no-warmup",
    default=True,
    show_default=True,
    help="each publisher publishes one unmeasured message first",
)
@json_option
def sim_command(
    nodes: int,
    degree: int,
    topology: str,
    latency: str,
    bandwidth: float | None,
    loss: float,
    messages: int,
    interval: str,
    settle: str,
    seed: int,
    scenario: str,
    churn: float,
    feeds: int,
    differ: int,
    flood: bool,
    warmup: bool,
    as_json: bool,
) -> None:
    """Simulate NODES real nodes (each its own store) gossiping on virtual time, and report.

    Links have a one-way latency, a bandwidth and a loss (as retransmission
    delay); MESSAGES messages are published by random nodes, one every
    INTERVAL. Prints whether every node converged, copies and wire bytes
    per message, delivery latency (p50, p99, max), peak memory and the
    run's seconds; --json prints one JSON object. The same --seed gives the
    same run. --scenario erase publishes one post and then its erase
    request instead, and reports how long the post took to reach every node
    against how long its content took to leave them; --scenario churn
    crashes and restarts a share of the nodes and reports the delivery to
    those that stayed up; --scenario reconnect connects nodes that carry
    FEEDS feeds and differ in DIFFER, and reports what syncing them cost
    (docs/SIMULATOR.md).
    """
    from tanglenode.node.sim.network import SimConfig, simulate
    from tanglenode.node.sim.topology import TopologyError

    if bandwidth is not None and not math.isfinite(bandwidth):
        raise BadInput("--bandwidth is a finite number of bytes a second (leave it out: none)")
    if differ > feeds:
        raise BadInput(f"--differ {differ} is more than the --feeds {feeds} carried")
    config = SimConfig(
        nodes=nodes,
        degree=degree,
        topology=topology,
        latency=seconds(latency),
        bandwidth=bandwidth or math.inf,
        loss=loss,
        messages=messages,
        interval=seconds(interval),
        settle=seconds(settle),
        seed=seed,
        flood=flood,
        scenario=scenario,
        warmup=warmup,
        churn=churn,
        feeds=feeds,
        differ=differ,
    )
    try:
        result = simulate(config)
    except TopologyError as error:
        raise BadInput(str(error)) from None
    except ModuleNotFoundError as error:  # networkx: the `sim` extra
        raise BadInput(f"tangled sim needs {error.name}: pip install 'tanglenode[sim]'") from None
    if as_json:
        emit_json(result.as_dict())
        return
    for key, value in result.as_dict().items():
        click.echo(f"{key:<32}{value}")
