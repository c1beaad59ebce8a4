package webui

import (
	"net/url"
	"strings"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/meta"
)

// snippet is a piece of client setup to copy: a file's content or
// commands, with this server's address, the repository and the user
// filled in. <API token> stays a placeholder: the tokens page makes one.
type snippet struct {
	Title, Text string
}

// setupFor is how each client of repo's format is pointed at it, from
// base (the address the browser uses), as the README documents them.
func setupFor(repo *meta.Repository, base, user string) []snippet {
	b := strings.TrimRight(base, "/")
	host := b
	if u, err := url.Parse(b); err == nil && u.Host != "" {
		host = u.Host
	}
	scheme := "http"
	if strings.HasPrefix(b, "https://") {
		scheme = "https"
	}
	withUser := scheme + "://" + user + ":<API token>@" + host
	r := repo.Name
	tok := "<API token>"
	switch repo.Format {
	case "generic":
		return []snippet{{"curl", "curl -u " + user + ":" + tok + " -T build.zip " + b + "/generic/" + r + "/mytool/1.0.0/build.zip\n" +
			"curl -u " + user + ":" + tok + " -O " + b + "/generic/" + r + "/mytool/1.0.0/build.zip"}}
	case "docker":
		return []snippet{
			{"docker", "docker login " + host + " -u " + user + "\ndocker tag app:1.0 " + host + "/" + r + "/app:1.0\ndocker push " + host + "/" + r + "/app:1.0"},
			{"crane", "crane auth login " + host + " -u " + user + " -p " + tok + "\ncrane push image.tar " + host + "/" + r + "/app:1.0\ncrane ls " + host + "/" + r + "/app"},
		}
	case "npm":
		reg := b + "/npm/" + r + "/"
		return []snippet{
			{".npmrc", "registry=" + reg + "\n//" + host + "/npm/" + r + "/:_authToken=" + tok},
			{"npm, pnpm", "npm publish\nnpm install <package>\npnpm add <package>"},
		}
	case "pypi":
		return []snippet{
			{"~/.pypirc (twine)", "[distutils]\nindex-servers = depot\n\n[depot]\nrepository = " + b + "/pypi/" + r + "/\nusername = " + user + "\npassword = " + tok},
			{"pip, uv", "twine upload -r depot dist/*\npip install --index-url " + withUser + "/pypi/" + r + "/simple/ <package>\n" +
				"uv publish --publish-url " + b + "/pypi/" + r + "/ -u " + user + " -p " + tok},
		}
	case "maven", "gradle":
		url := b + "/maven2/" + r
		return []snippet{
			{"~/.m2/settings.xml", "<servers><server><id>depot</id><username>" + user + "</username><password>" + tok + "</password></server></servers>"},
			{"pom.xml", "<repositories><repository><id>depot</id><url>" + url + "</url></repository></repositories>\n" +
				"<distributionManagement><repository><id>depot</id><url>" + url + "</url></repository></distributionManagement>"},
			{"build.gradle.kts", "repositories {\n    maven {\n        url = uri(\"" + url + "\")\n        credentials { username = \"" + user + "\"; password = \"" + tok + "\" }\n    }\n}"},
		}
	case "go":
		return []snippet{{"go", "curl -u " + user + ":" + tok + " -T module-v1.0.0.zip " + b + "/go/" + r + "/upload\n" +
			"export GOPROXY=" + withUser + "/go/" + r + " GONOSUMDB=<your module path prefix>\ngo get <module>@v1.0.0"}}
	case "crates":
		return []snippet{
			{"~/.cargo/config.toml", "[registries.depot]\nindex = \"sparse+" + b + "/crates/" + r + "/index/\"\ncredential-provider = [\"cargo:token\"]"},
			{"~/.cargo/credentials.toml", "[registries.depot]\ntoken = \"Bearer " + tok + "\""},
			{"cargo", "cargo publish --registry depot\n# Cargo.toml of a consumer: mycrate = { version = \"0.1\", registry = \"depot\" }"},
		}
	case "helm":
		return []snippet{{"helm", "curl -u " + user + ":" + tok + " -F chart=@mychart-0.1.0.tgz " + b + "/helm/" + r + "/api/charts\n" +
			"helm repo add depot " + b + "/helm/" + r + " --username " + user + " --password " + tok + "\nhelm search repo depot/"}}
	case "nuget":
		return []snippet{
			{"dotnet, nuget", "dotnet nuget push My.Pkg.1.0.0.nupkg -s " + b + "/nuget/" + r + "/v3/index.json -k " + tok + "\n" +
				"nuget push My.Pkg.1.0.0.nupkg -Source " + b + "/nuget/" + r + " -ApiKey " + tok},
			{"NuGet.config", "<packageSources>\n  <add key=\"depot\" value=\"" + b + "/nuget/" + r + "/v3/index.json\" />\n</packageSources>\n" +
				"<packageSourceCredentials>\n  <depot>\n    <add key=\"Username\" value=\"" + user + "\" />\n    <add key=\"ClearTextPassword\" value=\"" + tok + "\" />\n  </depot>\n</packageSourceCredentials>"},
		}
	case "rubygems":
		src := b + "/rubygems/" + r
		return []snippet{
			{"~/.gem/credentials", "---\n" + src + ": Bearer " + tok},
			{"gem, bundler", "gem push my-gem-1.0.0.gem --host " + src + "\ngem install my-gem --clear-sources --source " + withUser + "/rubygems/" + r + "/\n" +
				"bundle config set --local " + src + "/ " + user + ":" + tok + "\n# Gemfile: source \"" + src + "/\""},
		}
	case "composer":
		return []snippet{
			{"upload", "curl -u " + user + ":" + tok + " -T vendor-package-1.0.0.zip \"" + b + "/composer/" + r + "?version=1.0.0\""},
			{"composer.json", "{\"repositories\": [{\"type\": \"composer\", \"url\": \"" + b + "/composer/" + r + "\"}, {\"packagist.org\": false}]}"},
			{"auth.json", "{\"http-basic\": {\"" + host + "\": {\"username\": \"" + user + "\", \"password\": \"" + tok + "\"}}}"},
		}
	case "conda":
		return []snippet{{"conda, pixi, mamba", "curl -u " + user + ":" + tok + " -T mypkg-1.0.0-0.conda " + b + "/conda/" + r + "/noarch/mypkg-1.0.0-0.conda\n" +
			"# channel: " + withUser + "/conda/" + r}}
	}
	return nil
}

// pluginSetup fills in the snippets an installed plugin's manifest gives
// for its repositories: {base}, {host}, {repo} and {user}.
func pluginSetup(in []abi.Snippet, repo *meta.Repository, base, user string) []snippet {
	b := strings.TrimRight(base, "/")
	host := b
	if u, err := url.Parse(b); err == nil && u.Host != "" {
		host = u.Host
	}
	fill := strings.NewReplacer("{base}", b, "{host}", host, "{repo}", repo.Name, "{user}", user)
	var out []snippet
	for _, s := range in {
		out = append(out, snippet{Title: s.Title, Text: fill.Replace(s.Text)})
	}
	return out
}
