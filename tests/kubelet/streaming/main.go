// Command kubelet-streaming is the test kubelet's server for what the API server asks of a kubelet
// itself: a pod's container logs (GET /containerLogs/{namespace}/{pod}/{container}) and a command run
// in one of its containers (/exec/{namespace}/{pod}/{container}, upgraded to SPDY or WebSocket by
// Kubernetes' own remotecommand server, the one the kubelet's streaming server uses).
//
// The test kubelet (tests/kubelet/node.py) runs the containers; for each it writes
// {records}/{namespace}/{pod}/{container}.json: {"pid": the container's first process, "exec": the
// argv that enters it as its user with its environment, "log": its log file, "ended": whether it has
// ended}. Listens on 127.0.0.1 with a certificate of its own (the API server does not verify kubelets
// unless told to); prints its port on stdout, then serves until killed.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

type record struct {
	PID   int      `json:"pid"`
	Exec  []string `json:"exec"`
	Log   string   `json:"log"`
	Ended bool     `json:"ended"`
}

type server struct{ records string }

// find reads the record of /{kind}/{namespace}/{pod}/{container}.
func (s server) find(path string) (*record, string, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 4 {
		return nil, "", errors.New("want /{kind}/{namespace}/{pod}/{container}")
	}
	data, err := os.ReadFile(filepath.Join(s.records, parts[1], parts[2], parts[3]+".json"))
	if err != nil {
		return nil, parts[2], fmt.Errorf("container not found (%q)", parts[3])
	}
	var found record
	if err := json.Unmarshal(data, &found); err != nil {
		return nil, parts[2], err
	}
	return &found, parts[2], nil
}

func (s server) logs(w http.ResponseWriter, req *http.Request) {
	found, _, err := s.find(req.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	file, err := os.Open(found.Log)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer file.Close()
	w.Header().Set("Content-Type", "text/plain")
	if lines, err := strconv.Atoi(req.URL.Query().Get("tailLines")); err == nil {
		data, _ := io.ReadAll(file)
		all := strings.SplitAfter(string(data), "\n")
		if all[len(all)-1] == "" {
			all = all[:len(all)-1]
		}
		if lines < len(all) {
			all = all[len(all)-lines:]
		}
		_, _ = io.WriteString(w, strings.Join(all, ""))
	} else {
		_, _ = io.Copy(w, file)
	}
	if req.URL.Query().Get("follow") != "true" {
		return
	}
	// Follow: what the container writes next, until it has ended and all is sent, or the reader goes.
	for req.Context().Err() == nil {
		if n, _ := io.Copy(w, file); n > 0 {
			w.(http.Flusher).Flush()
			continue
		}
		if now, _, err := s.find(req.URL.Path); err != nil || now.Ended {
			_, _ = io.Copy(w, file)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type executor struct{ server }

func (e executor) ExecInContainer(ctx context.Context, pod, uid, container string, cmd []string, in io.Reader,
	out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	found, _, err := e.find(fmt.Sprintf("/exec/%s/%s/%s", podNamespace(ctx), pod, container))
	if err != nil {
		return err
	}
	if found.Ended {
		return fmt.Errorf("container %q is not running", container)
	}
	argv := append([]string{"--target=" + strconv.Itoa(found.PID), "--mount", "--uts", "--net", "--pid", "--"},
		append(append([]string{}, found.Exec...), cmd...)...)
	run := exec.CommandContext(ctx, "nsenter", argv...)
	run.Stdin, run.Stdout, run.Stderr = in, out, errOut
	if errOut == nil {
		run.Stderr = out // a tty, or a caller that did not ask for stderr
	}
	err = run.Run()
	var exited *exec.ExitError
	if errors.As(err, &exited) {
		return utilexec.CodeExitError{Err: err, Code: exited.ExitCode()}
	}
	return err
}

type namespaceKey struct{}

func podNamespace(ctx context.Context) string { return ctx.Value(namespaceKey{}).(string) }

func (s server) exec(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) != 4 {
		http.Error(w, "want /exec/{namespace}/{pod}/{container}", http.StatusNotFound)
		return
	}
	if _, _, err := s.find(req.URL.Path); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	options, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req = req.WithContext(context.WithValue(req.Context(), namespaceKey{}, parts[1]))
	remotecommand.ServeExec(w, req, executor{s}, parts[2], "", parts[3], req.URL.Query()["command"], options,
		4*time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
}

func certificate() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	template := x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func main() {
	records := flag.String("records", "", "the folder of the containers' records")
	flag.Parse()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	s := server{records: *records}
	mux := http.NewServeMux()
	mux.HandleFunc("/containerLogs/", s.logs)
	mux.HandleFunc("/exec/", s.exec)
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	httpServer := &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{certificate()}},
		// HTTP/1.1 only, as a kubelet: an upgrade to SPDY or WebSocket is an HTTP/1.1 request.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	log.Fatal(httpServer.ServeTLS(listener, "", ""))
}
