package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// (what names it in the error), the edited file must validate after, and
// WriteFileKeeping replaces the file.
//
// The new entry is spliced into the file's text (spliceItem), so that every
// other line stays as it was: comments, the commented keys ("#id: ...")
// with their indentation and so in their sections, blank lines. Only a
// list written in flow style over several lines is re-encoded from the
// YAML tree as a whole (reencode), which keeps comments but moves some.
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
	if list != nil && list.Kind == yaml.SequenceNode {
		for _, it := range list.Content {
			for i := 0; i+1 < len(it.Content); i += 2 {
				if it.Content[i].Value == idKey && it.Content[i+1].Value == id {
					return fmt.Errorf("%s: %s %q exists already", path, what, id)
				}
			}
		}
	}
	out, ok, err := spliceItem(data, keyNode, list, key, item)
	if err == nil && !ok {
		out, err = reencode(&doc, keyNode, list, key, item)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := Parse(path, out); err != nil {
		return fmt.Errorf("the edited config does not validate, file left unchanged:\n%w", err)
	}
	return WriteFileKeeping(path, out)
}

// spliceItem returns data with item added as the last block entry of the
// top-level list key, every other line unchanged: after the last line of
// a block list's last entry (its own commented keys, more indented than
// the list's dashes, stay with it); for a list with no value ("key:"), an
// empty or one-line flow list ("key: []", "key: [{...}]") or no key at
// all, the key's line is rewritten as "key:" followed by one block entry
// per item (the comment of an empty list, "none yet", speaks of its
// emptiness, which ends here). It reports false for the lists it leaves
// to reencode (a flow list over several lines).
func spliceItem(data []byte, keyNode, list *yaml.Node, key string, item *yaml.Node) ([]byte, bool, error) {
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}
	join := func(parts ...[]string) []byte {
		var b strings.Builder
		for _, p := range parts {
			for _, l := range p {
				b.WriteString(l)
			}
		}
		return []byte(b.String())
	}
	if keyNode == nil {
		entry, err := blockEntries(2, item)
		if err != nil {
			return nil, false, err
		}
		return join(lines, []string{key + ":\n"}, entry), true, nil
	}
	if keyNode.Column != 1 || keyNode.Line < 1 || keyNode.Line > len(lines) {
		return nil, false, nil
	}
	// A block list with entries: after its last entry's last line.
	if list.Kind == yaml.SequenceNode && list.Style&yaml.FlowStyle == 0 && len(list.Content) > 0 {
		dash := list.Column - 1 // the indentation of its "-"
		last := list.Content[len(list.Content)-1].Line - 1
		if dash < 0 || last < 0 || last >= len(lines) {
			return nil, false, nil
		}
		end := last
		for i := last + 1; i < len(lines); i++ {
			l := strings.TrimRight(lines[i], " \t\r\n")
			if l == "" {
				continue
			}
			indent := len(l) - len(strings.TrimLeft(l, " "))
			body := l[indent:]
			switch {
			case body == "---" || body == "...":
			case indent > dash:
				end = i
				continue
			case indent == dash && dash > 0 && (strings.HasPrefix(body, "#") || strings.HasPrefix(body, "-")):
				end = i
				continue
			case indent == dash && strings.HasPrefix(body, "- ") || body == "-":
				end = i
				continue
			}
			break
		}
		entry, err := blockEntries(dash, item)
		if err != nil {
			return nil, false, err
		}
		return join(lines[:end+1], entry, lines[end+1:]), true, nil
	}
	// "key:", "key: ~", "key: []", "key: [{...}]" on the key's line
	// alone: the lines up to the next content line are blank or comments.
	empty := list.Kind == yaml.ScalarNode && list.Tag == "!!null"
	flat := list.Kind == yaml.SequenceNode && list.Style&yaml.FlowStyle != 0
	if !empty && !flat {
		return nil, false, nil
	}
	k := keyNode.Line - 1
	for i := k + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if lines[i][0] == ' ' || lines[i][0] == '\t' || l[0] == ']' || l[0] == '-' {
			return nil, false, nil // the list goes on here
		}
		break
	}
	var items []*yaml.Node
	if flat {
		items = list.Content
	}
	entries, err := blockEntries(2, append(items, item)...)
	if err != nil {
		return nil, false, err
	}
	return join(lines[:k], []string{key + ":\n"}, entries, lines[k+1:]), true, nil
}

// blockEntries renders items as block list entries ("- name: x" and the
// further keys under it) whose dash is indent columns in.
func blockEntries(indent int, items ...*yaml.Node) ([]string, error) {
	var out []string
	pad := strings.Repeat(" ", indent)
	for _, it := range items {
		it.Style &^= yaml.FlowStyle
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(it); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		for i, l := range strings.SplitAfter(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if i == 0 {
				out = append(out, pad+"- "+l)
			} else {
				out = append(out, pad+"  "+l)
			}
		}
		out[len(out)-1] += "\n"
	}
	return out, nil
}

// reencode appends item to the list in the YAML tree and encodes the
// whole document: comments stay but the encoder places some of them
// anew, and blank lines go. For the lists spliceItem leaves alone.
func reencode(doc *yaml.Node, keyNode, list *yaml.Node, key string, item *yaml.Node) ([]byte, error) {
	root := doc.Content[0]
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, yamlStr(key), list)
	}
	if list.Kind != yaml.SequenceNode {
		// "key:" with no value is a null scalar: make it a list.
		*list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: list.Line, LineComment: list.LineComment}
	}
	if len(list.Content) == 0 {
		list.LineComment = ""
		if keyNode != nil {
			keyNode.LineComment = ""
		}
	}
	// One block entry per item, also where the list was in flow style.
	list.Style &^= yaml.FlowStyle
	for _, it := range list.Content {
		it.Style &^= yaml.FlowStyle
	}
	list.Content = append(list.Content, item)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
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
