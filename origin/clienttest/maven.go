package clienttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// debianRepo is Debian's system Maven repository: every plugin mvn needs
// here (deploy plugin 3.0.0 included), so no run touches the internet.
const debianRepo = "/usr/share/maven-repo"

// Maven is one isolated Maven setup: a writable local repository (a
// symlink copy of Debian's) and a settings.xml pinning every repository
// to one Depot repository.
type Maven struct {
	T        *testing.T
	Home     string
	Settings string
	Local    string // the local repository
}

// NewMaven writes settings for repository URL url with credentials user
// and secret (a password or an API token) under the server id "depot".
// "central" is redefined to url, so nothing ever asks the public one.
func NewMaven(t *testing.T, url, user, secret string) *Maven {
	t.Helper()
	RequireClients(t, "mvn")
	if _, err := os.Stat(debianRepo); err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatalf("%s is required: %v", debianRepo, err)
		}
		t.Skipf("%s missing: %v", debianRepo, err)
	}
	m := &Maven{T: t, Home: Home(t)}
	m.Local = filepath.Join(t.TempDir(), "m2")
	if err := os.MkdirAll(m.Local, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-rs", debianRepo+"/.", m.Local+"/").CombinedOutput(); err != nil {
		t.Fatalf("copy local repo: %v\n%s", err, out)
	}
	repo := func(kind string) string {
		return fmt.Sprintf(`<%[1]s><id>central</id><url>%[2]s</url><releases><enabled>true</enabled></releases>
          <snapshots><enabled>true</enabled><updatePolicy>always</updatePolicy></snapshots></%[1]s>`, kind, url)
	}
	m.Settings = filepath.Join(m.Home, "settings.xml")
	WriteFile(t, m.Settings, `<settings>
  <localRepository>`+m.Local+`</localRepository>
  <servers>
    <server><id>depot</id><username>`+user+`</username><password>`+secret+`</password></server>
    <server><id>central</id><username>`+user+`</username><password>`+secret+`</password></server>
  </servers>
  <profiles><profile><id>depot</id>
    <repositories>`+repo("repository")+`</repositories>
    <pluginRepositories>`+repo("pluginRepository")+`</pluginRepositories>
  </profile></profiles>
  <activeProfiles><activeProfile>depot</activeProfile></activeProfiles>
</settings>
`)
	return m
}

// Cmd is mvn in dir with args, on these settings.
func (m *Maven) Cmd(dir string, args ...string) Cmd {
	return Cmd{Dir: dir, Name: "mvn", Env: []string{"HOME=" + m.Home, "MAVEN_OPTS=-Xmx256m"},
		Args: append([]string{"-B", "-s", m.Settings}, args...)}
}

// Run runs mvn in dir and fails the test on failure.
func (m *Maven) Run(dir string, args ...string) string {
	m.T.Helper()
	return Run(m.T, m.Cmd(dir, args...))
}

// DeployArgs are maven-deploy-plugin 3.0.0's deploy-file arguments.
func DeployArgs(url, file string, extra ...string) []string {
	return append([]string{"org.apache.maven.plugins:maven-deploy-plugin:3.0.0:deploy-file", "-Dfile=" + file,
		"-DrepositoryId=depot", "-Durl=" + url}, extra...)
}

// DeployJar deploys a jar with the POM pom describes.
func (m *Maven) DeployJar(url, jar, pom string) string {
	m.T.Helper()
	return m.Run(m.Home, DeployArgs(url, jar, "-DpomFile="+pom)...)
}

// DeployPOM deploys a POM project (a parent or a BOM) described by pom.
func (m *Maven) DeployPOM(url, pom string) string {
	m.T.Helper()
	return m.Run(m.Home, DeployArgs(url, pom, "-DpomFile="+pom)...)
}
