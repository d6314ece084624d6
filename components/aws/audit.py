"""The cluster's audit log: a multi-region CloudTrail into a private, encrypted S3 bucket."""

from __future__ import annotations

import json
from typing import TypedDict

import pulumi
import pulumi_aws as aws


class AuditTrailArgs(TypedDict):
    cluster: str
    region: str  # where the bucket and the trail's home region are


def bucket_policy(bucket_arn: str) -> str:
    """What CloudTrail needs to write its log files, and nothing more (AWS CloudTrail user guide,
    "Amazon S3 bucket policy for CloudTrail")."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "CloudTrailAclCheck",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudtrail.amazonaws.com"},
                    "Action": "s3:GetBucketAcl",
                    "Resource": bucket_arn,
                },
                {
                    "Sid": "CloudTrailWrite",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudtrail.amazonaws.com"},
                    "Action": "s3:PutObject",
                    "Resource": f"{bucket_arn}/AWSLogs/*",
                    "Condition": {"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}},
                },
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [bucket_arn, f"{bucket_arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        },
        sort_keys=True,
    )


class AwsAuditTrail(pulumi.ComponentResource):
    """Records every API call in every region of the account (SOC 2 CC7.2, CIS AWS 3.1):
    multi-region, global service events, log-file validation on; the bucket blocks public access,
    encrypts at rest and refuses plain HTTP."""

    trail_arn: pulumi.Output[str]
    bucket_name: pulumi.Output[str]

    def __init__(self, name: str, args: AuditTrailArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aicluster:aws:AuditTrail", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        region = args["region"]
        bucket = aws.s3.Bucket(f"{name}-logs", force_destroy=False, region=region, opts=child)
        aws.s3.BucketPublicAccessBlock(
            f"{name}-logs",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            region=region,
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-logs",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    )
                )
            ],
            region=region,
            opts=child,
        )
        policy = aws.s3.BucketPolicy(
            f"{name}-logs",
            bucket=bucket.id,
            policy=bucket.arn.apply(bucket_policy),
            region=region,
            opts=child,
        )
        trail = aws.cloudtrail.Trail(
            f"{name}-trail",
            s3_bucket_name=bucket.id,
            is_multi_region_trail=True,
            include_global_service_events=True,
            enable_log_file_validation=True,
            region=region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        self.trail_arn = trail.arn
        self.bucket_name = bucket.id
        self.register_outputs({"trail_arn": trail.arn, "bucket": bucket.id})
