// The dev stack's MiniCluster: four brokers, rank 0 runs `hostname` on every node, then the Job
// completes. The args are the stack config keys (docs/configuration.md), typed by the generated SDK.
package main

import (
	"flux-minicluster.local/sdk/go/minicluster"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		hello, err := minicluster.NewMiniCluster(ctx, "hello", &minicluster.MiniClusterArgs{
			Image:   pulumi.String("ghcr.io/flux-framework/flux-restful-api:latest"),
			Size:    pulumi.Int(4),
			Tasks:   pulumi.Int(4),
			Command: pulumi.String("hostname"),
		})
		if err != nil {
			return err
		}
		ctx.Export("jobName", hello.JobName)
		// An output read in the program: where to follow rank 0's log.
		ctx.Export("followRank0", hello.LogsCommand.ApplyT(func(command string) string { return "run: " + command }))
		return nil
	})
}
