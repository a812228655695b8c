// The dev stack's MiniCluster: four brokers, rank 0 runs `hostname` on every node, then the Job
// completes. The args are the stack config keys (docs/configuration.md), typed by the generated SDK.
import * as minicluster from "@flux-minicluster/minicluster";

const hello = new minicluster.MiniCluster("hello", {
    image: "ghcr.io/flux-framework/flux-restful-api:latest",
    size: 4,
    tasks: 4,
    command: "hostname",
});

export const jobName = hello.jobName;
// An output read in the program: where to follow rank 0's log.
export const followRank0 = hello.logsCommand.apply((command) => `run: ${command}`);
