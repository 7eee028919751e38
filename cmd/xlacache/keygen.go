package main

import (
	"crypto/ed25519"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/sign"
)

var keygenCmd = &cobra.Command{
	Use:   "keygen --out FILE",
	Short: "Make an Ed25519 signing key: the private key to a new file (0600), the public key and its id printed",
	Long: `Make an Ed25519 key pair for signing cache entries. The private key is
written to a new file (PEM, PKCS #8, mode 0600; an existing file is never
replaced): give it to the CI writers only, as
XLACACHE_SIGNING_PRIVATE_KEY_FILE. The public key is printed: give it to
every reader as XLACACHE_VERIFY_KEYS. Readers that hold only the public key
verify what they load and cannot sign, so they can never publish an entry
others would accept.

To rotate: make a new key, add its public key to every reader's
XLACACHE_VERIFY_KEYS beside the old one, switch the writers to the new
private key, and remove the old public key once 'xlacache verify' shows no
entry signed by its key id.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		out, _ := cmd.Flags().GetString("out")
		if out == "" {
			return cli.Usagef("keygen: --out FILE is required (where the private key goes)")
		}
		priv, err := sign.GenerateKey()
		if err != nil {
			return err
		}
		if err := sign.WritePrivateKeyFile(out, priv); err != nil {
			return err
		}
		pub := priv.Public().(ed25519.PublicKey)
		rep := keygenReport{PrivateKeyFile: out, PublicKey: sign.EncodePublicKey(pub), KeyID: sign.IDOf(pub).String()}
		if jsonOutput(cmd) {
			return writeJSON(cmd.OutOrStdout(), rep)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "private key written to %s (keep it on the writers only)\n", rep.PrivateKeyFile)
		fmt.Fprintf(w, "key id: %s\n", rep.KeyID)
		fmt.Fprintf(w, "public key: %s\n\n", rep.PublicKey)
		fmt.Fprintf(w, "writers: export %s=%s\n", config.EnvSigningPrivateKeyFile, rep.PrivateKeyFile)
		fmt.Fprintf(w, "readers: export %s=%s\n", config.EnvVerifyKeys, rep.PublicKey)
		return nil
	},
}

// keygenReport is keygen's --json output.
type keygenReport struct {
	PrivateKeyFile string `json:"private_key_file"`
	PublicKey      string `json:"public_key"`
	KeyID          string `json:"key_id"`
}

func init() {
	keygenCmd.Flags().StringP("out", "o", "", "file to write the private key to (must not exist)")
	rootCmd.AddCommand(keygenCmd)
}
