"""Kubernetes: a managed control plane (EKS, GKE or AKS) with the pools as fabric-wired node groups, and Kueue."""
