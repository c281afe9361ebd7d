package config

import (
	"go.yaml.in/yaml/v3"

	"plantd/httpapi/oauth2/oauthconfig"
)

// AddOAuthClient appends a client to the config file's oauthClients, as
// AddToken adds a token: the YAML tree is edited (comments stay), the
// result validated before WriteFileKeeping replaces the file, and a
// client id already in use is refused.
func AddOAuthClient(path string, c oauthconfig.Client) error {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		yamlStr("clientId"), yamlStr(c.ClientID), yamlStr("secretSha256"), yamlStr(c.SecretSHA256), yamlStr("role"), yamlStr(c.Role),
	}}
	if len(c.RedirectURIs) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, u := range c.RedirectURIs {
			seq.Content = append(seq.Content, yamlStr(u))
		}
		m.Content = append(m.Content, yamlStr("redirectUris"), seq)
	}
	if c.PreApproved {
		m.Content = append(m.Content, yamlStr("preApproved"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	return appendToList(path, "oauthClients", "clientId", c.ClientID, "a client with id", m)
}
