package kube

import (
	"context"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// clients speaks to the API server about pods and Jobs only: REST clients
// over a scheme of core/v1 and batch/v1, rather than client-go's typed
// clientset, whose scheme of every API group would add tens of MB to
// chorus and time to each of its starts.
type clients struct {
	core, batch, authz *rest.RESTClient
	params             runtime.ParameterCodec
}

var (
	schemeOnce sync.Once
	scheme     *runtime.Scheme
	codecs     serializer.CodecFactory
)

func newClients(cfg *rest.Config) (*clients, error) {
	schemeOnce.Do(func() {
		scheme = runtime.NewScheme()
		_ = corev1.AddToScheme(scheme)
		_ = batchv1.AddToScheme(scheme)
		_ = authorizationv1.AddToScheme(scheme)
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		codecs = serializer.NewCodecFactory(scheme)
	})
	mk := func(api string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion = api, &gv
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "chorus"
		}
		return rest.RESTClientFor(c)
	}
	core, err := mk("/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	batch, err := mk("/apis", batchv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	authz, err := mk("/apis", authorizationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &clients{core: core, batch: batch, authz: authz, params: runtime.NewParameterCodec(scheme)}, nil
}

func (c *clients) createJob(ctx context.Context, ns string, j *batchv1.Job) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	err := c.batch.Post().Namespace(ns).Resource("jobs").Body(j).Do(ctx).Into(out)
	return out, err
}

func (c *clients) listJobs(ctx context.Context, ns, selector string) (*batchv1.JobList, error) {
	out := &batchv1.JobList{}
	err := c.batch.Get().Namespace(ns).Resource("jobs").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *clients) deleteJob(ctx context.Context, ns, name string) error {
	bg := metav1.DeletePropagationBackground
	return c.batch.Delete().Namespace(ns).Resource("jobs").Name(name).
		Body(&metav1.DeleteOptions{PropagationPolicy: &bg}).Do(ctx).Error()
}

func (c *clients) deletePod(ctx context.Context, ns, name string) error {
	return c.core.Delete().Namespace(ns).Resource("pods").Name(name).Do(ctx).Error()
}

func (c *clients) listPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := c.core.Get().Namespace(ns).Resource("pods").VersionedParams(&o, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *clients) watchPods(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return c.core.Get().Namespace(ns).Resource("pods").VersionedParams(&o, c.params).Watch(ctx)
}

func (c *clients) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := c.core.Get().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(out)
	return out, err
}

// allowed asks the API server whether these credentials may do verb on
// resource (group "" is core) in ns.
func (c *clients) allowed(ctx context.Context, ns, verb, group, resource, sub string) (bool, error) {
	in := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub}}}
	out := &authorizationv1.SelfSubjectAccessReview{}
	if err := c.authz.Post().Resource("selfsubjectaccessreviews").Body(in).Do(ctx).Into(out); err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}
