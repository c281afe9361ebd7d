package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"go.yaml.in/yaml/v3"

	"plantd/config"
)

// runToken handles "plantd token add": it makes a new bearer token, adds
// its SHA-256 hash to the config file's tokens and prints the token once.
// The config never holds the token itself.
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprintln(stderr, "usage: plantd token add --name NAME --role standard|installer|gridoperator [-c FILE] [--print-only]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	fs := newFlagSet("token add", "--name NAME --role ROLE [-c FILE] [--print-only]", stderr)
	path := fs.String("c", defaultConfigPath, "config file to add the token's hash to")
	name := fs.String("name", "", "who or what uses the token (e.g. installer-laptop)")
	role := fs.String("role", config.RoleStandard, "standard (read), installer (+ logs, grid control), gridoperator (grid control)")
	printOnly := fs.Bool("print-only", false, "print the token and the config entry, change no file")
	pos, code, ok := parseArgs(fs, args[1:])
	if !ok {
		return code
	}
	if len(pos) != 0 || *name == "" {
		fs.Usage()
		return exitUsage
	}
	switch *role {
	case config.RoleStandard, config.RoleInstaller, config.RoleGridOperator:
	default:
		fmt.Fprintf(stderr, "plantd token add: --role %q: want standard, installer or gridoperator\n", *role)
		return exitUsage
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		fmt.Fprintf(stderr, "plantd token add: %v\n", err)
		return exitFailure
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	entry := config.Token{Name: *name, SHA256: config.TokenHash(token), Role: *role}
	if *printOnly {
		fmt.Fprintf(stdout, "token (shown once, keep it secret): %s\n\nadd to the config under tokens:\n  - name: %s\n    sha256: %s\n    role: %s\n",
			token, entry.Name, entry.SHA256, entry.Role)
		return exitOK
	}
	if err := addToken(*path, entry); err != nil {
		fmt.Fprintf(stderr, "plantd token add: %v\n", err)
		return exitConfig
	}
	fmt.Fprintf(stdout, "added token %q (%s) to %s; reload plantd (systemctl reload plantd, or SIGHUP) to use it.\ntoken (shown once, keep it secret): %s\n",
		entry.Name, entry.Role, *path, token)
	return exitOK
}

// addToken appends a token entry to the config file's tokens list. It edits
// the YAML tree, so comments stay; it validates the result before it
// replaces the file atomically, and refuses a name already in use.
func addToken(path string, t config.Token) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := config.Parse(path, data); err != nil {
		return fmt.Errorf("the config has problems already; fix them first:\n%w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the config is not a YAML mapping", path)
	}
	root := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "tokens" {
			list = root.Content[i+1]
		}
	}
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "tokens"}, list)
	}
	if list.Kind != yaml.SequenceNode {
		// "tokens:" with no value is a null scalar: make it a list.
		*list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: list.Line}
	}
	for _, item := range list.Content {
		for i := 0; i+1 < len(item.Content); i += 2 {
			if item.Content[i].Value == "name" && item.Content[i+1].Value == t.Name {
				return fmt.Errorf("%s: a token named %q exists already", path, t.Name)
			}
		}
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("name"), str(t.Name), str("sha256"), str(t.SHA256), str("role"), str(t.Role),
	}})
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := config.Parse(path, out.Bytes()); err != nil {
		return fmt.Errorf("the edited config does not validate, file left unchanged:\n%w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plantd.yaml.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	// Keep the owner too: the packaged config is root:plantd 0640, and a
	// root-owned group would lock the daemon out of its own config.
	if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
