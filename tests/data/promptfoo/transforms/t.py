def get_transform(output, context):
    return str(len(output.split()))
