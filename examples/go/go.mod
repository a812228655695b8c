module minicluster-go

go 1.24

require github.com/pulumi/pulumi/sdk/v3 v3.274.1

// What `pulumi package add` adds: the SDK it generated, from this folder.
require flux-minicluster.local/sdk/go v0.0.0

replace flux-minicluster.local/sdk/go => ./sdks/minicluster
