package volcano

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"math/big"
)

// newSSHKeyPair makes the key pair of a converted ssh plugin (tests may fix one).
var newSSHKeyPair = sshKeyPair

// sshKeyPair makes an RSA key pair for Volcano's ssh plugin: the private key in PEM
// (PKCS #1), the public key as a line of OpenSSH's authorized_keys.
func sshKeyPair() (private, public []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	private = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	// The "ssh-rsa" public key format (RFC 4253, section 6.6): the strings "ssh-rsa",
	// e and n, each with its length first; e and n are mpints (RFC 4251, section 5),
	// big-endian, with a zero byte first where the high bit is set.
	var wire []byte
	for _, field := range [][]byte{[]byte("ssh-rsa"), mpint(big.NewInt(int64(key.E))), mpint(key.N)} {
		wire = binary.BigEndian.AppendUint32(wire, uint32(len(field)))
		wire = append(wire, field...)
	}
	return private, []byte("ssh-rsa " + base64.StdEncoding.EncodeToString(wire) + "\n"), nil
}

// mpint is a positive number as an SSH mpint's bytes.
func mpint(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) > 0 && b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return b
}
