// The real node's sandbox ("pause") image's only program (tests/engines/node.sh builds it, static):
// the first process of every pod's sandbox, which holds its namespaces and does nothing else. It
// reaps the zombies a shared PID namespace hands it and exits on SIGTERM or SIGINT, as Kubernetes'
// own pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
