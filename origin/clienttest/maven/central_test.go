package maven_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestMvnBuildWithCentralPlugins: a real build whose plugins come from
// Maven Central (versions Debian does not ship) while our repository
// serves the project's own dependency: mvn package resolves each from
// where it lives, and the dependency is recorded as ours.
func TestMvnBuildWithCentralPlugins(t *testing.T) {
	clienttest.RequireClients(t, "mvn")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("libs", "maven", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		url := e.URL + "/maven2/libs"
		work := t.TempDir()
		// The dependency, deployed with the offline setup.
		m := newMvn(t, url, alice.Name, alice.Token)
		jar, _ := makeJar(t, work, "greeter-1.0.jar", "greeter")
		clienttest.WriteFile(t, filepath.Join(work, "greeter.xml"), libPOM("greeter", "1.0"))
		m.DeployJar(url, jar, filepath.Join(work, "greeter.xml"))

		// The build: our repository by id, Central as Maven knows it.
		home, local := clienttest.Home(t), filepath.Join(t.TempDir(), "m2")
		settings := filepath.Join(home, "settings.xml")
		clienttest.WriteFile(t, settings, `<settings><localRepository>`+local+`</localRepository>
  <servers><server><id>depot</id><username>`+alice.Name+`</username><password>`+alice.Token+`</password></server></servers></settings>`)
		app := filepath.Join(work, "app")
		clienttest.WriteFile(t, filepath.Join(app, "pom.xml"), `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId><artifactId>app</artifactId><version>1.0</version>
  <properties><maven.compiler.release>17</maven.compiler.release><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <repositories><repository><id>depot</id><url>`+url+`</url></repository></repositories>
  <dependencies><dependency><groupId>com.example</groupId><artifactId>greeter</artifactId><version>1.0</version></dependency></dependencies>
  <build><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>3.5.2</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
  </plugins></build>
</project>`)
		clienttest.WriteFile(t, filepath.Join(app, "src", "main", "java", "com", "example", "App.java"),
			"package com.example;\n\npublic class App {\n  public static void main(String[] args) { System.out.println(\"hi\"); }\n}\n")
		clienttest.Run(t, clienttest.Cmd{Dir: app, Name: "mvn", Env: []string{"HOME=" + home, "MAVEN_OPTS=-Xmx256m"},
			Args: []string{"-B", "-q", "-s", settings, "-DskipTests", "package"}})
		if _, err := os.Stat(filepath.Join(app, "target", "app-1.0.jar")); err != nil {
			t.Fatalf("the build made no jar: %v", err)
		}
		from := func(dir string) string {
			b, _ := os.ReadFile(filepath.Join(local, dir, "_remote.repositories"))
			return string(b)
		}
		if got := from("com/example/greeter/1.0"); !strings.Contains(got, ">depot=") {
			t.Fatalf("the dependency came from %q, not from depot", got)
		}
		if got := from("org/apache/maven/plugins/maven-jar-plugin/3.4.2"); !strings.Contains(got, ">central=") {
			t.Fatalf("the jar plugin came from %q, not from Central", got)
		}
	})
}
