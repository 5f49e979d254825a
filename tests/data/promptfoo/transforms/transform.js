module.exports = {
  customTransform: (output, context) => {
    return output.toUpperCase() + ':' + context.vars.q;
  },
};
