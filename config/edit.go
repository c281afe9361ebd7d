package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// AddToken appends a token entry to the config file's tokens list. It
// edits the YAML tree, so comments stay; it validates the result before it
// replaces the file (WriteFileKeeping), and refuses a name already in use.
func AddToken(path string, t Token) error {
	item := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		yamlStr("name"), yamlStr(t.Name), yamlStr("sha256"), yamlStr(t.SHA256), yamlStr("role"), yamlStr(t.Role),
	}}
	return appendToList(path, "tokens", "name", t.Name, "a token named", item)
}

func yamlStr(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// appendToList appends item to the top-level list key of the config file:
// the file must validate before, an entry whose idKey is id is refused
// (what names it in the error), the edited tree (comments kept) must
// validate after, and WriteFileKeeping replaces the file.
func appendToList(path, key, idKey, id, what string, item *yaml.Node) error {
	data, err := ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := Parse(path, data); err != nil {
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
	var keyNode, list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			keyNode, list = root.Content[i], root.Content[i+1]
		}
	}
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, yamlStr(key), list)
	}
	if list.Kind != yaml.SequenceNode {
		// "key:" with no value is a null scalar: make it a list.
		*list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: list.Line, LineComment: list.LineComment}
	}
	if len(list.Content) == 0 {
		// The comment of an empty list ("tokens: []   # none yet: ...",
		// "tokens:   # none yet") speaks of its emptiness, which ends here.
		list.LineComment = ""
		if keyNode != nil {
			keyNode.LineComment = ""
		}
	}
	// One block entry per item ("- name: ..." lines), also where the list
	// was written in flow style ("[]", "[{...}]").
	list.Style &^= yaml.FlowStyle
	for _, it := range list.Content {
		it.Style &^= yaml.FlowStyle
	}
	for _, it := range list.Content {
		for i := 0; i+1 < len(it.Content); i += 2 {
			if it.Content[i].Value == idKey && it.Content[i+1].Value == id {
				return fmt.Errorf("%s: %s %q exists already", path, what, id)
			}
		}
	}
	list.Content = append(list.Content, item)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if _, err := Parse(path, out.Bytes()); err != nil {
		return fmt.Errorf("the edited config does not validate, file left unchanged:\n%w", err)
	}
	return WriteFileKeeping(path, out.Bytes())
}

// WriteFileKeeping replaces the file at path with data atomically and
// durably, as an installer's edit must: through a symlink it writes the
// link's target (the link stays); the new file keeps the old one's mode,
// owner and group (a root:plantd 0640 config stays readable by the
// service); the file and then its directory are synced, so a power cut
// leaves the old or the new file, never none.
func WriteFileKeeping(path string, data []byte) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename: no such file
	fail := func(err error) error {
		tmp.Close()
		return fmt.Errorf("write %s: %w", target, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil && (int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid()) {
			// Not allowed to give the file its owner back: better refuse
			// than leave a config the service cannot read.
			return fail(fmt.Errorf("keep owner %d:%d: %w", st.Uid, st.Gid, err))
		}
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
