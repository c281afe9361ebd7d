package config

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// AddOAuthClient appends a client to the config file's oauthClients, as
// AddToken adds a token: the YAML tree is edited (comments stay), the
// result validated before WriteFileKeeping replaces the file, and a
// client id already in use is refused.
func AddOAuthClient(path string, c OAuthClient) error {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("clientId"), str(c.ClientID), str("secretSha256"), str(c.SecretSHA256), str("role"), str(c.Role),
	}}
	if len(c.RedirectURIs) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, u := range c.RedirectURIs {
			seq.Content = append(seq.Content, str(u))
		}
		m.Content = append(m.Content, str("redirectUris"), seq)
	}
	if c.PreApproved {
		m.Content = append(m.Content, str("preApproved"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	data, err := os.ReadFile(path)
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
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "oauthClients" {
			list = root.Content[i+1]
		}
	}
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, str("oauthClients"), list)
	}
	if list.Kind != yaml.SequenceNode { // "oauthClients:" with no value
		*list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: list.Line}
	}
	for _, item := range list.Content {
		for i := 0; i+1 < len(item.Content); i += 2 {
			if item.Content[i].Value == "clientId" && item.Content[i+1].Value == c.ClientID {
				return fmt.Errorf("%s: a client with id %q exists already", path, c.ClientID)
			}
		}
	}
	list.Content = append(list.Content, m)
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
