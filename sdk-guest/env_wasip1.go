//go:build wasip1

package sdk

import (
	"fmt"
	"os"

	"github.com/extism/go-pdk"
)

func configGet(key string) (string, bool) { return pdk.GetConfig(key) }

func httpSend(req HTTPRequest) (*HTTPResponse, error) {
	r := pdk.NewHTTPRequest(pdk.HTTPMethod(httpMethod(req.Method)), req.URL)
	for k, v := range req.Header {
		r.SetHeader(k, v)
	}
	if len(req.Body) > 0 {
		r.SetBody(req.Body)
	}
	resp := r.Send()
	if resp.Status() == 0 {
		return nil, fmt.Errorf("sdk.HTTP: %s %s: the host returned no response", req.Method, req.URL)
	}
	return &HTTPResponse{Status: int(resp.Status()), Header: resp.Headers(), Body: resp.Body()}, nil
}

func openDir(dir string) (*os.Root, error) { return os.OpenRoot(dir) }
